"""A round of idle reports ("nothing found") regroups the blocks nobody holds, unless the kind forms each
lease's block at lease time: then the next lease forms its block from the whole plan anyway, and the
regrouping was a tenth of the coordinator's CPU at 16 agents
(docs/notes/2026-12-05-coordinator-per-lease.md)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask, JoinRequest
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from coordinator.store.base import AbandonedLease


@pytest.mark.anyio
@pytest.mark.parametrize(("neighbourhood_leases", "regroups"), [(True, False), (False, True)])
async def test_a_round_of_idle_reports_regroups_only_a_kind_that_does_not_form_leases(
    neighbourhood_leases: bool, regroups: bool
) -> None:
    store = MemoryStore()
    service = CoordinatorService(ServiceSettings(), store, ServiceMetrics(CollectorRegistry()))
    params = {
        "map": "empty-16-16", "robots": 12, "blocks": 3, "seed": 1, "exact_limit": 0,
        "initial": "shortest", "neighbourhood_leases": neighbourhood_leases,
    }  # fmt: skip
    spec, join, _ = await service.create(CreateTask(kind="routing", params=params, mode="async"))
    joined = await service.join(spec.id, join, JoinRequest(name="a"))
    agent = await service.authenticate(spec.id, f"Bearer {joined.token}")
    grant = await service.lease(spec.id, agent)
    idle = AbandonedLease(
        id="idle-1", agent=agent.id, block=grant.block, base_version=grant.version, outcome="declined",
        at=service.clock(),
    )  # fmt: skip
    await service.abandon(spec.id, agent, grant.lease_id, idle)  # one agent's "nothing found": a quorum
    for _ in range(100):
        if rounds := await store.rounds(spec.id):
            break
        await asyncio.sleep(0.05)
    assert rounds, "the round of idle reports did not close"
    assert rounds[-1].record.accepted == 0
    assert rounds[-1].record.regrouped is regroups
    await service.close()
