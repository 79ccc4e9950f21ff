"""``abandoned_since`` reads what filtering ``abandoned`` would, for any recording order and any cut-off.

The memory and SQLite stores answer it from an index of their own (a sorted list, a ``json_extract`` filter),
not by filtering: this property holds them to the base class's definition, ties at the cut-off included.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from blockopt.testing.stores import T0, head, spec
from coordinator.store.base import AbandonedLease, Store
from coordinator.store.memory import MemoryStore
from coordinator.store.sqlite import SQLiteStore

offsets = st.lists(st.integers(min_value=0, max_value=20), max_size=25)
"""Whole offsets from T0, so that ties (two records at one time, a cut-off on a record) are common."""


async def _check(make: Callable[[], Store], times: list[int], cut: int) -> None:
    store = make()
    await store.create_task(spec(), head())
    for i, dt in enumerate(times):
        at = T0 + dt
        record = AbandonedLease(id=f"r{i}", agent="a", block=0, base_version=0, outcome="declined", at=at)
        assert await store.record_abandoned("t-1", record)
    every = await store.abandoned("t-1")
    assert [a.at for a in every] == sorted(a.at for a in every)  # oldest first
    since = await store.abandoned_since("t-1", T0 + cut)
    assert {a.id for a in since} == {a.id for a in every if a.at > T0 + cut}
    assert [a.at for a in since] == sorted(a.at for a in since)
    await store.close()


@settings(max_examples=60, deadline=None)
@given(times=offsets, cut=st.integers(min_value=-1, max_value=21))
def test_memory_store_reads_the_recent_abandoned_leases_as_a_filter_would(times: list[int], cut: int) -> None:
    asyncio.run(_check(MemoryStore, times, cut))


@settings(max_examples=30, deadline=None)
@given(times=offsets, cut=st.integers(min_value=-1, max_value=21))
def test_sqlite_store_reads_the_recent_abandoned_leases_as_a_filter_would(times: list[int], cut: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_check(lambda: SQLiteStore(str(Path(folder) / "books.db")), times, cut))
