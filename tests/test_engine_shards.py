"""Engine processes of one supervisor split the tasks by a stable hash (``shard_of``); a non-owner takes a
task over only when a proposal has waited past the round deadline plus the round lock's TTL."""

from __future__ import annotations

import uuid

import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from coordinator.engine_worker import deferrer, shard_of
from coordinator.metrics import ServiceMetrics
from coordinator.records import Proposal
from coordinator.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from coordinator.wire import CreateTask, JoinRequest
from tests.conftest import ADMIN

pytestmark = pytest.mark.anyio


def test_shards_are_stable_and_spread() -> None:
    ids = [f"t-{uuid.uuid4().hex[:12]}" for _ in range(200)]
    assert [shard_of(t, 4) for t in ids] == [shard_of(t, 4) for t in ids]
    counts = [sum(shard_of(t, 4) == i for t in ids) for i in range(4)]
    assert all(c > 20 for c in counts), counts
    assert {shard_of(t, 1) for t in ids} == {0}


async def test_a_non_owner_waits_for_the_owner_then_takes_over() -> None:
    now = [1000.0]
    settings = ServiceSettings(admin_token=SecretStr(ADMIN), round_deadline=1.0, round_lock_ttl=2.0)
    service = CoordinatorService(settings, MemoryStore(), ServiceMetrics(CollectorRegistry()), lambda: now[0])
    spec, join, _ = await service.create(CreateTask(kind="quadratic", params={"blocks": 2, "dim": 2}))
    owner = shard_of(spec.id, 2)
    mine, other = deferrer(service, owner, 2), deferrer(service, 1 - owner, 2)
    assert not await mine(spec.id)
    assert await other(spec.id)  # nothing waiting: the owner's business
    joined = await service.join(spec.id, join, JoinRequest())
    agent = await service.authenticate(spec.id, f"Bearer {joined.token}")
    grant = await service.lease(spec.id, agent)
    p = Proposal(
        id="p1",
        agent=agent.id,
        block=grant.block,
        value=[0.0, 0.0],
        base_version=grant.version,
        predicted_improvement=0.1,
    )
    await service.store.enqueue_proposal(spec.id, grant.lease_id, p, now[0])
    now[0] += 2.9  # within deadline + lock TTL (3 s): still the owner's
    assert await other(spec.id)
    now[0] += 0.2  # past it: the owner is gone or stuck
    assert not await other(spec.id)
    assert not await mine(spec.id)
