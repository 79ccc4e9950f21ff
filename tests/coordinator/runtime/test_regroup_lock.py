"""Leases wait while a commit may regroup the blocks nobody holds (async mode, ``regroup_after: arrival``).

A lease taken while such a commit is scored would hold a block the commit then changes, and its answer would
come back ``stale_base``. Arrivals took the lock already; a round of idle reports (leases that ended with
nothing to propose) runs through the rounds path, which regroups too and did not.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask, JoinRequest
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from coordinator.store.base import AbandonedLease, AgentRecord


@pytest.mark.anyio
@pytest.mark.parametrize(("regroup_after", "waits"), [("arrival", True), ("stalled", False)])
async def test_a_lease_waits_while_a_round_of_idle_reports_may_regroup(
    regroup_after: str, waits: bool
) -> None:
    store = MemoryStore()
    service = CoordinatorService(ServiceSettings(), store, ServiceMetrics(CollectorRegistry()))
    params = {"blocks": 3, "dim": 2}
    spec, join, _ = await service.create(
        CreateTask(kind="quadratic", params=params, mode="async", regroup_after=regroup_after)
    )

    async def agent(name: str) -> AgentRecord:
        joined = await service.join(spec.id, join, JoinRequest(name=name))
        return await service.authenticate(spec.id, f"Bearer {joined.token}")

    a, b = await agent("a"), await agent("b")
    grant = await service.lease(spec.id, a)
    scoring, go = asyncio.Event(), asyncio.Event()
    step = service.steps.engine_step

    async def paused(*args: Any) -> Any:
        scoring.set()
        await go.wait()
        return await step(*args)

    service.steps.engine_step = paused  # type: ignore[method-assign]
    idle = AbandonedLease(
        id="idle-1", agent=a.id, block=grant.block, base_version=grant.version, outcome="declined",
        at=service.clock(),
    )  # fmt: skip
    await store.record_abandoned(spec.id, idle)
    await service.release(spec.id, a, grant.lease_id)  # a's "nothing found" is a quorum: a round runs
    await asyncio.wait_for(scoring.wait(), 5)
    leasing = asyncio.create_task(service.lease(spec.id, b))
    await asyncio.sleep(0.2)
    assert leasing.done() is not waits
    go.set()
    later = await asyncio.wait_for(leasing, 5)
    assert later.version == (await store.get_head(spec.id)).version  # leased on what the round left
    await service.close()
