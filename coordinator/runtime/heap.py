"""The garbage collector in a long-running server process (called once a server process has started)."""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect once, then freeze what is alive: the modules, the app, its routes and pydantic's
    validators (~130,000 objects) leave the collector's reach. Every full collection scanned them all
    before, tens of milliseconds each on the event loop or a round's thread, several times per 1,000
    proposals (BENCHMARKS.md, "Hot path"). Objects made later are collected as usual."""
    gc.collect()
    gc.freeze()
