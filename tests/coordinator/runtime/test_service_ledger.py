"""The forecast's ledger reads each stored round once per process, and never twice under concurrent calls."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask, JoinRequest, ProposalIn
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from coordinator.store.base import RoundEntry
from tasks.quadratic import QuadraticProposer


class YieldingStore(MemoryStore):
    """A memory store whose round reads yield to the event loop, as a networked store's do; it counts them."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[int] = []

    async def rounds(self, task_id: str, since: int = 0) -> list[RoundEntry]:
        await asyncio.sleep(0)
        found = await super().rounds(task_id, since)
        self.read.append(len(found))
        return found


@pytest.mark.anyio
async def test_ledger_reads_each_round_once_even_when_called_concurrently() -> None:
    store = YieldingStore()
    service = CoordinatorService(ServiceSettings(), store, ServiceMetrics(CollectorRegistry()))
    spec, join, _ = await service.create(CreateTask(kind="quadratic", params={"blocks": 2, "dim": 2}))
    joined = await service.join(spec.id, join, JoinRequest(name="a"))
    me = await service.authenticate(spec.id, f"Bearer {joined.token}")
    proposer = QuadraticProposer()
    for _ in range(3):  # one agent, quorum 1: each submit closes a round
        grant = await service.lease(spec.id, me)
        draft = proposer.propose(grant.contract)
        assert draft is not None
        body = ProposalIn.answering(grant, draft)
        view, decided = await service.submit(spec.id, me, body, 5.0)
        assert decided, view
    rounds = len(await MemoryStore.rounds(store, spec.id))
    assert rounds >= 3
    service.forget(spec.id)  # a fresh cache (forget also drops it: see cache_sizes)
    store.read.clear()
    first, second = await asyncio.gather(service.ledgers.ledger(spec.id), service.ledgers.ledger(spec.id))
    assert len(first.records) == len(second.records) == rounds
    again = await service.ledgers.ledger(spec.id)
    assert len(again.records) == rounds and store.read[-1] == 0  # nothing new: nothing read again
    await service.close()


@pytest.mark.anyio
async def test_round_forecast_from_the_gaps_is_the_full_ledgers() -> None:
    """Each round's forecast comes from the rounds' gaps alone (``Ledgers.predict_next``), not the ledger
    rebuilt with every usage row: the same number as the full ledger's after every round, of a run long enough
    that the forecast exists (it needs 9 ratios) and its adaptive level moves."""
    store = MemoryStore()
    service = CoordinatorService(ServiceSettings(), store, ServiceMetrics(CollectorRegistry()))
    spec, join, _ = await service.create(CreateTask(kind="quadratic", params={"blocks": 3, "dim": 2}))
    joined = await service.join(spec.id, join, JoinRequest(name="a"))
    me = await service.authenticate(spec.id, f"Bearer {joined.token}")
    proposer = QuadraticProposer(noise=0.3, seed=4)
    forecasts = []
    for _ in range(30):
        grant = await service.lease(spec.id, me)
        draft = proposer.propose(grant.contract)
        if draft is None:
            break
        body = ProposalIn.answering(grant, draft)
        await service.submit(spec.id, me, body, 5.0)
        full = (await service.ledgers.ledger(spec.id)).predict_next()
        assert await service.ledgers.predict_next(spec.id) == full
        forecasts.append(full)
    assert sum(f is not None for f in forecasts) >= 5
