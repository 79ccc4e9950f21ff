"""Round runners share the tasks: each task's tick work is done by one live runner, and a runner that leaves
hands its tasks over (``coordinator/runtime/shards.py``)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.shards import owner_of
from coordinator.runtime.wire import CreateTask
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from coordinator.store.base import Store
from tests.clock_support import ManualClock

TTL = 3.0


def _runner(store: Store, clock: ManualClock) -> CoordinatorService:
    settings = ServiceSettings(round_lock_ttl=TTL)
    return CoordinatorService(settings, store, ServiceMetrics(CollectorRegistry()), clock=clock)


def test_every_task_has_one_owner_and_a_leaving_runner_moves_only_its_own() -> None:
    tasks = [f"t-{i}" for i in range(600)]
    runners = ["host:1:a", "host:2:b", "host:3:c"]
    owners = {t: owner_of(t, runners) for t in tasks}
    assert owners == {t: owner_of(t, list(reversed(runners))) for t in tasks}  # order of the list: no matter
    shares = [sum(1 for o in owners.values() if o == r) for r in runners]
    assert min(shares) >= 150, shares  # 200 each expected
    after = {t: owner_of(t, runners[:2]) for t in tasks}
    moved = {t for t in tasks if after[t] != owners[t]}
    assert moved == {t for t in tasks if owners[t] == runners[2]}


async def _lapsed_leases(store: Store, ids: list[str], now: float) -> set[str]:
    """The tasks whose lapsed lease nobody expired yet (expiring it here)."""
    return {t for t in ids if await store.expire_leases(t, now)}


@pytest.mark.anyio
async def test_two_runners_split_the_tick_and_the_survivor_takes_all_when_one_leaves() -> None:
    store, clock = MemoryStore(), ManualClock()
    a, b = _runner(store, clock), _runner(store, clock)
    ids = []
    for _ in range(12):
        spec, *_ = await a.create(CreateTask(kind="quadratic", params={"blocks": 2, "dim": 2}))
        ids.append(spec.id)
    await a.tick()
    await b.tick()
    clock.now += TTL / 3
    await a.tick()  # a's second beat: now each knows the other
    assert a.scheduler.runners == b.scheduler.runners and len(a.scheduler.runners) == 2
    mine_a = {t for t in ids if a.serves(t)}
    mine_b = {t for t in ids if b.serves(t)}
    assert mine_a | mine_b == set(ids) and not mine_a & mine_b
    assert mine_a and mine_b  # 12 tasks: both get some (for these owners' hashes)

    for t in ids:  # a lease on every task, then let them all lapse
        assert await store.acquire_lease(t, "agent", 0, 0.5, clock.now) is not None
    clock.now += 0.6  # (b's beat still counts: it lapses TTL after b's last tick)
    await a.tick()  # a expires the leases of its own tasks only
    assert await _lapsed_leases(store, sorted(mine_b), clock.now) == mine_b

    await b.close()  # b leaves: a serves everything from its next beat
    clock.now += TTL / 3
    await a.tick()
    assert all(a.serves(t) for t in ids)
    for t in ids:
        assert await store.acquire_lease(t, "agent", 0, 1.0, clock.now) is not None
    clock.now += 2.0
    await a.tick()
    assert await _lapsed_leases(store, ids, clock.now) == set()
    await a.close()


@pytest.mark.anyio
async def test_a_silent_runner_loses_its_tasks_when_its_beat_lapses() -> None:
    store, clock = MemoryStore(), ManualClock()
    a, b = _runner(store, clock), _runner(store, clock)
    spec, *_ = await a.create(CreateTask(kind="quadratic", params={"blocks": 2, "dim": 2}))
    await a.tick()
    await b.tick()
    clock.now += TTL / 3
    await a.tick()
    owner = a if a.serves(spec.id) else b
    other = b if owner is a else a
    assert not other.serves(spec.id)
    clock.now += TTL + 0.1  # the owner stops beating (killed, paused); the other keeps ticking
    await other.tick()
    assert other.serves(spec.id)
