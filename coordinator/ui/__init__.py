"""The browser UI at ``/ui/``: static modules served from this package, plus the small public ``/v1`` routes
it reads (agents and leases, a kind's own view). The page talks to the same API as every other client."""

from __future__ import annotations

from coordinator.ui.mount import install

__all__ = ["install"]
