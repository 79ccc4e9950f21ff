"""Stores hold every piece of task state; the service keeps only caches it can rebuild."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coordinator.store.base import Store
from coordinator.store.memory import MemoryStore

if TYPE_CHECKING:
    from coordinator.settings import ServiceSettings


def store_option(value: str) -> dict[str, Any]:
    """Settings fields for ``--store``: ``memory``, ``redis`` (the default URL), ``redis://HOST:PORT/DB`` or
    ``sqlite:///path/state.db`` (durable, one node)."""
    if value in ("memory", "redis"):
        return {"store": value}
    if value.startswith(("redis://", "rediss://", "unix://")):
        return {"store": "redis", "redis_url": value}
    if value.startswith("sqlite://"):
        from coordinator.store.sqlite import path_of_url

        return {"store": "sqlite", "sqlite_path": str(path_of_url(value))}
    from coordinator.errors import InvalidRequest

    raise InvalidRequest(
        f"--store must be 'memory', sqlite:///path/state.db or a redis://HOST:PORT/DB URL, not '{value}'",
        store=value,
    )


def make_store(settings: ServiceSettings | str) -> Store:
    kind = settings if isinstance(settings, str) else settings.store
    if kind == "memory":
        return MemoryStore()
    if kind == "redis":
        from coordinator.settings import ServiceSettings
        from coordinator.store.redis import RedisStore

        s = settings if isinstance(settings, ServiceSettings) else ServiceSettings(store="redis")
        return RedisStore.from_url(
            s.redis_url,
            prefix=s.redis_prefix,
            commit_mode=s.redis_commit,
            max_connections=s.redis_pool_size,
            pool_timeout=s.redis_pool_timeout,
        )
    if kind == "sqlite":
        from coordinator.settings import ServiceSettings
        from coordinator.store.sqlite import SQLiteStore

        if not isinstance(settings, ServiceSettings) or settings.sqlite_path is None:
            from coordinator.errors import InvalidRequest

            raise InvalidRequest("the sqlite store needs a file: --store sqlite:///path/state.db", store=kind)
        return SQLiteStore(settings.sqlite_path)
    from coordinator.errors import InvalidRequest

    raise InvalidRequest(
        f"store '{kind}' is not available in this build (known: memory, sqlite, redis)", store=kind
    )


__all__ = ["MemoryStore", "Store", "make_store", "store_option"]
