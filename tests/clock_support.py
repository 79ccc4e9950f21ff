"""A clock the test moves by hand, for code that takes ``clock=`` (leases, beats, retention)."""

from __future__ import annotations


class ManualClock:
    """Returns ``now`` until the test changes it: expiry is tested without sleeping."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now
