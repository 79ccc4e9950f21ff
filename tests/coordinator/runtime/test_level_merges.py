"""Level merges through the service (async mode, routing's ``LevelMerges``): a team's lease of the whole plan
asks for its walk (``answer_walk``), a walk answered over HTTP that keeps the sum of costs is merged, the head
moves to a new version at the same objective, and /metrics counts it apart (``blockopt_merges{kind="level"}``,
not ``independent``: the books and the stall rule count improvements)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from coordinator.engine.records import Snapshot
from tasks.registry import create_task
from tasks.routing import RoutingTask
from tests.conftest import Coordinator
from tests.coordinator.api.test_service_api import lease, submit
from tests.tasks.routing.test_routing_level_merges import level_step

TEAM = {"map": "random-32-32-10", "robots": 40, "blocks": 3, "exact_limit": 0, "level_merges": True}


def merges(coordinator: Coordinator, task_id: str) -> dict[str, float]:
    text = coordinator.client().get("/metrics").text
    return {
        s.labels["kind"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "blockopt_merges_total" and s.labels.get("task") == task_id
    }


def test_a_walk_answered_over_http_merges_level_and_counts_apart(coordinator: Coordinator) -> None:
    created = coordinator.create_task(kind="routing", params=TEAM, mode="async")
    tid = created["id"]
    agent, _ = coordinator.join(created, "walker")
    grant = lease(agent, tid)
    data = grant["contract"]["data"]
    assert data["answer_walk"] and len(data["robots"]) == TEAM["robots"]  # the whole plan
    task = create_task("routing", TEAM)  # the same first plan, to find a level step in
    assert isinstance(task, RoutingTask)
    first = task.initial_state()
    whole = task.form_lease(first, 0, frozenset(), 0)
    assert whole is not None and len(whole.blocks[0]) == TEAM["robots"]
    snap = Snapshot(0, task.objective(first), (0,) * task.n_blocks, whole)
    xy = task.grid.xy
    assert all(r["path"] == [list(xy(c)) for c in first.paths[r["id"]]] for r in data["robots"])
    robot, moved = level_step(task, snap, 0)
    value = [[list(xy(c)) for c in moved] if r["id"] == robot else None for r in data["robots"]]
    before = coordinator.admin.get(f"/v1/tasks/{tid}").json()
    view = submit(agent, tid, grant, value, wait=5.0)
    assert view["status"] == "accepted" and "level" in view["verdict"]["reason"]
    after = coordinator.admin.get(f"/v1/tasks/{tid}").json()
    assert after["version"] == before["version"] + 1 and after["objective"] == before["objective"]
    solution = coordinator.admin.get(f"/v1/tasks/{tid}/solution").json()["solution"]
    assert solution["paths"][robot] == [list(xy(c)) for c in moved]
    counted = merges(coordinator, tid)
    assert counted["level"] == 1 and counted["independent"] == 0
