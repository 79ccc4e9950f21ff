"""Finished tasks are deleted ``retain_finished`` seconds after they end, in every store: state stays bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from coordinator import errors
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from coordinator.store.base import Store
from coordinator.store.redis import RedisStore
from coordinator.store.sqlite import SQLiteStore
from tests.clock_support import ManualClock
from tests.conftest import ADMIN, blockopt_process
from tests.redis_support import new_prefix, purge, require_redis

RETAIN = 60.0


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "sqlite":
        s = SQLiteStore(tmp_path / "state.db")
        yield s
        await s.close()
    else:
        url, prefix = require_redis(), new_prefix()
        r = RedisStore.from_url(url, prefix=prefix)
        yield r
        await r.close()
        assert purge(url, prefix) == []


def _service(store: Store, clock: ManualClock, retain: float | None = RETAIN) -> CoordinatorService:
    settings = ServiceSettings(retain_finished=retain)
    return CoordinatorService(settings, store, ServiceMetrics(CollectorRegistry()), clock=clock)


async def _task(service: CoordinatorService) -> str:
    spec, *_ = await service.create(CreateTask(kind="quadratic", params={"blocks": 3, "dim": 2}))
    return spec.id


@pytest.mark.anyio
async def test_a_finished_task_is_evicted_after_the_retention(store: Store) -> None:
    clock = ManualClock()
    service = _service(store, clock)
    empty = await store.record_count()
    done, running = await _task(service), await _task(service)
    await service.view(done)  # fills this process's caches too
    await service.stop(done)
    clock.now += RETAIN - 1
    await service.tick()
    assert (await store.get_runtime(done)).status == "stopped"  # kept until the retention has passed
    clock.now += 1
    await service.tick()
    with pytest.raises(errors.NotFound):
        await store.get_task(done)
    with pytest.raises(errors.NotFound):
        await service.view(done)
    assert await store.task_ids() == [running]  # a running task is never evicted, however old
    assert service.cache_sizes()["built"] == 1  # its cached build is dropped with it
    await service.stop(running)
    clock.now += RETAIN
    await service.tick()
    assert await store.task_ids() == []
    assert await store.record_count() == empty  # nothing of either task is left behind
    assert service.cache_sizes()["built"] == service.cache_sizes()["specs"] == 0


@pytest.mark.anyio
async def test_other_processes_drop_an_evicted_task_from_their_caches(store: Store) -> None:
    """Split mode: one engine evicts; another engine (at its tick) and an API process (at its next
    request for the task, it never ticks) must not keep the task's spec and build."""
    clock = ManualClock()
    evictor, engine, api = _service(store, clock), _service(store, clock), _service(store, clock)
    api.rounds_here = False
    done, running = await _task(evictor), await _task(evictor)
    for other in (engine, api):
        await other.view(done)  # each process caches the task's spec and build
        await other.view(running)
    assert engine.cache_sizes()["specs"] == api.cache_sizes()["specs"] == 2
    await evictor.stop(done)
    clock.now += RETAIN
    await evictor.tick()
    assert await store.task_ids() == [running]
    assert api.cache_sizes()["specs"] == 2  # nothing told the others yet
    await engine.tick()
    assert (engine.cache_sizes()["specs"], engine.cache_sizes()["built"]) == (1, 1)
    with pytest.raises(errors.NotFound):
        await api.view(done)
    assert (api.cache_sizes()["specs"], api.cache_sizes()["built"]) == (1, 1)
    await evictor.stop(running)
    await store.delete_task(running)  # (leave the shared Redis clean)


@pytest.mark.anyio
async def test_without_retention_finished_tasks_are_kept(store: Store) -> None:
    clock = ManualClock()
    service = _service(store, clock, retain=None)
    done = await _task(service)
    await service.stop(done)
    clock.now += 10 * 365 * 86400
    await service.tick()
    assert (await store.get_runtime(done)).status == "stopped"
    await store.delete_task(done)  # (leave the shared Redis clean)


def test_retain_finished_must_be_positive() -> None:
    proc = blockopt_process("serve", "--retain-finished", "0", env={"BLOCKOPT_ADMIN_TOKEN": ADMIN})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.count(b"\n") == 1 and b"--retain-finished: Input should be greater than 0" in err


@pytest.mark.anyio
@pytest.mark.parametrize("staleness", [0, 3])
async def test_the_stall_rule_reads_the_lag_from_the_knobs_without_building_a_proposer(
    monkeypatch: pytest.MonkeyPatch, staleness: int
) -> None:
    """The coordinator never builds an agent-side proposer (for some kinds that loads a database copy)."""
    from tasks.quadratic import QuadraticTask

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the coordinator built a proposer")

    monkeypatch.setattr(QuadraticTask, "make_proposer", refuse)
    service = _service(MemoryStore(), ManualClock())
    req = CreateTask(
        kind="quadratic",
        params={"blocks": 3, "dim": 2},
        proposer={"name": "heuristic", "knobs": {"staleness": staleness}},
    )
    spec, *_ = await service.create(req)
    assert spec.stop_lag_rounds == staleness
