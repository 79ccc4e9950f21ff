"""The memory store against the shared Store contract."""

from __future__ import annotations

import pytest

from coordinator.store import MemoryStore
from coordinator.store.base import Store
from tests.store_contract import StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Store:
        return MemoryStore()
