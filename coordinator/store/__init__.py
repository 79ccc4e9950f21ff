"""Stores hold every piece of task state; the service keeps only caches it can rebuild."""

from __future__ import annotations

from coordinator.store.base import Store
from coordinator.store.memory import MemoryStore


def make_store(kind: str) -> Store:
    if kind == "memory":
        return MemoryStore()
    from coordinator.errors import InvalidRequest

    raise InvalidRequest(f"store '{kind}' is not available in this build (known: memory)", store=kind)


__all__ = ["MemoryStore", "Store", "make_store"]
