"""The garbage collector in a long-running process: the coordinator's server and every agent process call
``settle`` once started."""

from __future__ import annotations

import gc

YOUNG = 20_000
"""Net allocations between two young-generation collections (Python's default: 700). A request allocates a
few hundred objects (pydantic models, dicts, coroutines) that die by reference counting; at 700 the
collector ran every few requests, rescanning the live ones: 6-10% of a 64-agent coordinator's CPU
(in-process driver, 599-629 against 561-567 µs per proposal; docs/notes/2026-12-01-scale-curves-and-
service-hot-path.md, "Hot path, in-process memory store")."""


def settle() -> None:
    """Collect once, then freeze what is alive: the modules, the app, its routes and pydantic's
    validators (~130,000 objects) leave the collector's reach. Every full collection scanned them all
    before, tens of milliseconds each on the event loop or a round's thread, several times per 1,000
    proposals (docs/notes/2026-12-01-scale-curves-and-service-hot-path.md). Objects made later are
    collected as usual, the young ones less often (``YOUNG``)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, old)
