"""Contracts written since the one an agent keeps, over HTTP: ``since`` on a lease, on a proposal's next
lease, on the lease route served by FastAPI; a version the coordinator does not hold gets the whole contract;
a worker whose proposer keeps its contracts gets the later ones written since (``ContractDeltas``)."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from agents.worker import Worker, WorkerConfig
from coordinator.engine.records import Snapshot
from tasks.registry import create_task
from tasks.routing import RoutingTask
from tests.conftest import Coordinator
from tests.coordinator.api.test_service_api import lease
from tests.tasks.routing.test_routing_level_merges import level_step

TEAM = {"map": "random-32-32-10", "robots": 40, "blocks": 3, "exact_limit": 0, "level_merges": True}


def with_paths(grant: dict[str, Any]) -> list[int]:
    return [r["id"] for r in grant["contract"]["data"]["robots"] if "path" in r]


def a_level_step(grant: dict[str, Any]) -> tuple[int, list[Any]]:
    """A robot and the value that moves it to another path of the same cost, on the task's first plan."""
    task = create_task("routing", TEAM)
    assert isinstance(task, RoutingTask)
    first = task.initial_state()
    whole = task.form_lease(first, 0, frozenset(), 0)
    assert whole is not None
    robot, moved = level_step(task, Snapshot(0, task.objective(first), (0,) * task.n_blocks, whole), 0)
    xy = task.grid.xy
    robots = grant["contract"]["data"]["robots"]
    return robot, [[list(xy(c)) for c in moved] if r["id"] == robot else None for r in robots]


def test_a_next_lease_since_the_kept_contract_carries_only_the_changed_path(coordinator: Coordinator) -> None:
    created = coordinator.create_task(kind="routing", params=TEAM, mode="async")
    tid = created["id"]
    agent, _ = coordinator.join(created, "keeper")
    first = lease(agent, tid)
    assert "since" not in first["contract"] and len(with_paths(first)) == TEAM["robots"]
    robot, value = a_level_step(first)
    body = {
        "lease_id": first["lease_id"],
        "block": first["block"],
        "base_version": first["version"],
        "value": value,
        "predicted_improvement": 0.0,
    }
    params = {"wait": 5.0, "next_lease": "true", "since": first["version"]}
    view = agent.post(f"/v1/tasks/{tid}/proposals", json=body, params=params).json()
    assert view["status"] == "accepted"
    nxt = view["next_lease"]
    assert nxt["version"] > first["version"] and nxt["contract"]["since"] == first["version"]
    assert with_paths(nxt) == [robot]
    agent.delete(f"/v1/tasks/{tid}/leases/{nxt['lease_id']}")

    # the lease route, served by the hot path and (an encoded query) by FastAPI: the same contract
    hot = agent.post(f"/v1/tasks/{tid}/leases", params={"since": first["version"]}).json()
    agent.delete(f"/v1/tasks/{tid}/leases/{hot['lease_id']}")
    encoded = httpx.URL(f"/v1/tasks/{tid}/leases").copy_with(query=f"since=%3{first['version']}".encode())
    assert first["version"] < 10
    routed = agent.post(encoded).json()
    agent.delete(f"/v1/tasks/{tid}/leases/{routed['lease_id']}")
    for grant in (hot, routed):
        assert grant["contract"]["since"] == first["version"] and with_paths(grant) == [robot]


def test_a_version_the_coordinator_does_not_hold_gets_the_whole_contract(coordinator: Coordinator) -> None:
    created = coordinator.create_task(kind="routing", params=TEAM, mode="async")
    tid = created["id"]
    agent, _ = coordinator.join(created, "newcomer")
    grant = agent.post(f"/v1/tasks/{tid}/leases", params={"since": 999}).json()
    assert "since" not in grant["contract"] and len(with_paths(grant)) == TEAM["robots"]


def test_a_since_that_is_not_a_version_is_refused_with_the_reason(coordinator: Coordinator) -> None:
    created = coordinator.create_task(kind="routing", params=TEAM, mode="async")
    tid = created["id"]
    agent, _ = coordinator.join(created, "typo")
    for bad in ("abc", "-1"):
        r = agent.post(f"/v1/tasks/{tid}/leases", params={"since": bad})
        assert r.status_code == 422 and "since" in r.text, (bad, r.text)
    assert "since" not in lease(agent, tid)["contract"]  # nothing lost: the agent leases as before


def test_a_worker_that_keeps_its_contracts_gets_them_written_since(coordinator: Coordinator) -> None:
    created = coordinator.create_task(kind="routing", params=TEAM, mode="async")
    stop = threading.Event()
    worker = Worker(WorkerConfig(coordinator.url, created["id"], created["join_token"], name="walker"), stop)
    timer = threading.Timer(4.0, stop.set)
    timer.start()
    stats = worker.run()
    timer.cancel()
    assert stats.leases >= 5 and stats.accepted >= 1
    assert stats.written_since >= stats.leases - 2, stats  # all but the first (and one lost to a race)
    task = coordinator.admin.get(f"/v1/tasks/{created['id']}").json()
    assert task["version"] > 1
