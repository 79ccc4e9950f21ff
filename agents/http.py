"""The agent's HTTP client: keep-alive connections, jittered backoff on connection errors and 5xx.

Errors come back as ``ApiError`` carrying the coordinator's machine-readable
code, so the worker decides by code (409 drop and re-lease, 429 wait, ...).
Requests are retried only when they are safe to repeat: reads, and writes
that carry an idempotency key (proposal ids) or are harmless twice.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import httpx


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, body: dict[str, Any], retry_after: float | None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body
        self.retry_after = retry_after

    @classmethod
    def from_response(cls, r: httpx.Response) -> ApiError:
        try:
            body = r.json()
            err = body.get("error", {}) if isinstance(body, dict) else {}
        except ValueError:
            body, err = {}, {}
        retry = err.get("retry_after")
        if retry is None and "retry-after" in r.headers:
            try:
                retry = float(r.headers["retry-after"])
            except ValueError:
                retry = None
        return cls(
            r.status_code,
            str(err.get("code", "http_error")),
            str(err.get("message", r.reason_phrase)),
            body if isinstance(body, dict) else {},
            retry,
        )


class GaveUp(Exception):
    """The coordinator stayed unreachable (or kept failing) through every retry."""


class Api:
    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 8,
        backoff_base: float = 0.1,
        backoff_max: float = 5.0,
        stop: threading.Event | None = None,
        seed: int = 0,
        unavailable_patience: float = 120.0,
    ) -> None:
        self.client = httpx.Client(
            base_url=base_url.rstrip("/"),
            timeout=timeout,
            limits=httpx.Limits(max_connections=4, max_keepalive_connections=4),
        )
        self.max_retries = max_retries
        self.unavailable_patience = unavailable_patience
        self.reconnect_patience = 0.0
        """Seconds connection errors are retried beyond ``max_retries`` (the worker sets it once joined)."""
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.stop = stop or threading.Event()
        self.rng = random.Random(seed)
        self.token: str | None = None

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(max, base·2^attempt)]."""
        return self.rng.uniform(0.0, min(self.backoff_max, self.backoff_base * 2**attempt))

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        token: str | None = None,
        retry: bool = True,
    ) -> httpx.Response:
        """One request; connection errors and 5xx are retried with jittered backoff (``max_retries``), and a
        503 (the coordinator's store is unreachable, or it is starting) for up to ``unavailable_patience``
        seconds more, each wait at least the answer's Retry-After, and connection errors for up to
        ``reconnect_patience``: an outage is waited out, not given up on."""
        headers = {"Authorization": f"Bearer {token or self.token}"} if (token or self.token) else {}
        attempts = self.max_retries + 1 if retry else 1
        last: Exception | None = None
        attempt = 0
        started = time.monotonic()
        wait = 0.0
        while attempt < attempts:
            if (attempt or wait) and self.stop.wait(max(wait, self.backoff(max(attempt - 1, 0)))):
                break
            wait = 0.0
            try:
                r = self.client.request(method, path, json=json, params=params, headers=headers)
            except httpx.TransportError as exc:
                last = exc
                if retry and time.monotonic() - started < self.reconnect_patience:
                    wait = min(self.backoff_max, 1.0)  # the coordinator is restarting: poll it steadily
                    continue
                attempt += 1
                continue
            if r.status_code == 503 and retry and time.monotonic() - started < self.unavailable_patience:
                last = ApiError.from_response(r)
                wait = min(self.backoff_max, last.retry_after or self.backoff_base)
                continue
            if r.status_code >= 500:
                last = ApiError.from_response(r)
                attempt += 1
                continue
            if r.status_code >= 400:
                raise ApiError.from_response(r)
            return r
        if isinstance(last, ApiError):
            raise last
        raise GaveUp(f"{method} {path}: {type(last).__name__ if last else 'stopped'}: {last}")

    def close(self) -> None:
        self.client.close()
