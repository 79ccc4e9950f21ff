"""Keeps a lease alive while a slow proposer thinks: an LLM call can outlive the lease's TTL."""

from __future__ import annotations

import threading

from agents.http import Api, ApiError, GaveUp


class LeaseRenewer:
    """Renews the lease (``POST .../leases/{id}/renew``) every ttl/3 in a thread of its own, from ``with``'s
    start to its end; it stops at the first refusal (the lease is gone: the answer will say so)."""

    def __init__(self, api: Api, renew_path: str, ttl: float) -> None:
        self.api, self.path, self.period = api, renew_path, max(0.05, ttl / 3.0)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="lease-renewer")

    def _run(self) -> None:
        while not self.done.wait(self.period):
            try:
                self.api.call("POST", self.path, retry=False)
            except (ApiError, GaveUp):
                return

    def __enter__(self) -> LeaseRenewer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
