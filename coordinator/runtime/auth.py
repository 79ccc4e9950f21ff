"""Tokens and per-agent rate limits.

Tokens are random, shown once, and stored only as SHA-256 digests; every
comparison goes through ``hmac.compare_digest``. Nothing here logs a token or
puts one in an error.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable

from pydantic import SecretStr

from coordinator import errors


def new_id(prefix: str) -> str:
    """A task's or agent's id (not a secret: ids appear in URLs and logs)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def new_token(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(24)}"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def bearer(header: str | None) -> str:
    """The token of an ``Authorization: Bearer ...`` header, or Unauthorized."""
    if not header:
        raise errors.Unauthorized("missing Authorization: Bearer <token> header")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise errors.Unauthorized("the Authorization header must be 'Bearer <token>'")
    return token.strip()


def check_admin(admin: SecretStr | None, header: str | None) -> None:
    if admin is None:
        raise errors.Forbidden("administration is disabled: the service has no admin token configured")
    if not hmac.compare_digest(bearer(header).encode(), admin.get_secret_value().encode()):
        raise errors.Unauthorized("the admin token does not match")


def matches(token: str, digest: str) -> bool:
    return hmac.compare_digest(token_hash(token), digest)


class RateLimiter:
    """Token buckets keyed by agent; bounded, least recently used keys are dropped first."""

    def __init__(
        self, rate: float, burst: float, max_keys: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def check(self, key: str) -> None:
        now = self.clock()
        tokens, last = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            raise errors.RateLimited(
                "too many requests from this agent; slow down",
                retry_after=round((1.0 - tokens) / self.rate, 3),
            )
        self._buckets[key] = (tokens - 1.0, now)
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
