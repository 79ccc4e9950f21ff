"""The Redis store: several coordinator replicas share one Redis (key table: ``keys.py``)."""

from __future__ import annotations

from coordinator.store.redis.keys import DEFAULT_PREFIX, KeySpace
from coordinator.store.redis.store import RedisStore

__all__ = ["DEFAULT_PREFIX", "KeySpace", "RedisStore"]
