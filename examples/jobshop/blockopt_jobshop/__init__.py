"""Job-shop scheduling, a blockopt task kind in its own package (registered by its entry point)."""

from __future__ import annotations

from blockopt_jobshop.task import JobShopTask

__all__ = ["JobShopTask"]
