"""The memory store against the shared Store contract."""

from __future__ import annotations

import pytest

from blockopt.testing.stores import StoreContract, queue_state_against_recount
from coordinator.store import MemoryStore
from coordinator.store.base import Store


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Store:
        return MemoryStore()

    @pytest.mark.anyio
    async def test_queue_state_reports_the_earliest_arrival_time_under_clock_skew(self, store: Store) -> None:
        """The memory store keeps its oldest pending proposal in a heap: arrivals stamped earlier than the one
        before (another replica's clock) still give the earliest time, as the full recount does."""
        await queue_state_against_recount(store, skewed=True)
