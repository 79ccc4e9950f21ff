"""Every process that builds a task warms its kind up before the task's first use (``capabilities.WarmUp``).

Routing's kernels compile in about 6 s on a fresh install (0.2 s from numba's cache). Before, only the test
session warmed them: a fresh clone's first routing proposal spent its 0.5 s budget compiling and found
nothing, and a coordinator's first rebase or a replica's first scoring would have stalled as long. The
coordinator warms a task up while it prepares it and when another replica builds it from the store, both
in a thread; the agent's side is in ``tests/agents/test_agents.py``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from coordinator.engine.rounds import EngineSettings
from coordinator.runtime.inproc import RunSettings, run_inproc
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from tasks import capabilities
from tasks.quadratic import QuadraticParams, QuadraticTask
from tasks.registry import create_task
from tasks.routing.task import RoutingTask
from tests.clock_support import ManualClock
from tests.conftest import Coordinator

PARAMS = {"map": "random-32-32-10", "robots": 20, "blocks": 2, "exact_limit": 0, "initial": "shortest"}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(what, thread name) for each routing warm-up and first plan, in order."""
    seen: list[tuple[str, str]] = []
    warm, first_plan = RoutingTask.warm_up, RoutingTask.initial_state

    def warm_up(self: RoutingTask) -> None:
        seen.append(("warm", threading.current_thread().name))
        warm(self)

    def initial_state(self: RoutingTask) -> Any:
        seen.append(("first plan", threading.current_thread().name))
        return first_plan(self)

    monkeypatch.setattr(RoutingTask, "warm_up", warm_up)
    monkeypatch.setattr(RoutingTask, "initial_state", initial_state)
    return seen


def test_routing_offers_a_warm_up_and_a_kind_without_one_has_nothing_to_do() -> None:
    assert capabilities.offers(RoutingTask, capabilities.WarmUp)
    assert not capabilities.offers(QuadraticTask, capabilities.WarmUp)
    capabilities.warm_up(QuadraticTask(QuadraticParams(blocks=2, dim=2)))  # the fallback: nothing, no error


def test_the_coordinator_warms_a_task_up_before_its_first_plan(
    coordinator: Coordinator, calls: list[tuple[str, str]]
) -> None:
    task = coordinator.create_task(kind="routing", params=PARAMS, mode="async")
    coordinator.wait_for(task["id"], lambda v: v["status"] != "preparing")
    assert [what for what, _ in calls][:2] == ["warm", "first plan"]


@pytest.mark.anyio
async def test_a_replica_warms_a_task_up_when_it_builds_it_from_the_store_off_its_event_loop(
    calls: list[tuple[str, str]],
) -> None:
    store, clock = MemoryStore(), ManualClock()
    a, b = (
        CoordinatorService(ServiceSettings(), store, ServiceMetrics(CollectorRegistry()), clock=clock)
        for _ in range(2)
    )
    spec, *_ = await a.create(CreateTask(kind="routing", params=PARAMS, mode="async"))
    calls.clear()
    await b.cache.build(spec, await store.get_head(spec.id))
    assert [what for what, _ in calls] == ["warm"]
    assert calls[0][1] != threading.current_thread().name  # a worker thread, not the loop's


def test_an_in_process_run_warms_its_task_up_before_its_first_plan(calls: list[tuple[str, str]]) -> None:
    task = create_task("routing", PARAMS)
    knobs = task.ProposerParams(time_budget=0.05)
    run_inproc(task, knobs, RunSettings(agents=1, max_rounds=1), EngineSettings())
    assert [what for what, _ in calls][:2] == ["warm", "first plan"]
