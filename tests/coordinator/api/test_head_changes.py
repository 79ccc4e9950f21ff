"""``GET /v1/tasks/{id}/changes?since=V`` on a real server: what merged since the head a search is on."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from coordinator.runtime.cache import BuiltTask
from tasks.registry import create_task
from tests.conftest import Coordinator
from tests.coordinator.api.test_service_api import error_of, lease, propose, submit

PARAMS = {"map": "random-32-32-10", "robots": 40, "blocks": 3, "exact_limit": 0, "initial": "shortest"}


def routing_task(coordinator: Coordinator) -> tuple[dict[str, Any], httpx.Client, httpx.Client]:
    task = coordinator.create_task(kind="routing", params=PARAMS, mode="async", stop={"stall_rounds": 50})
    a, b = (coordinator.join(task, name=n)[0] for n in ("a", "b"))
    return task, a, b


def merge_an_answer(agent: httpx.Client, tid: str) -> dict[int, list[list[int]]]:
    """Lease, search with the routing heuristic, submit and wait for the merge: the robots it wrote."""
    grant = lease(agent, tid)
    local = create_task("routing", PARAMS)
    draft = local.make_proposer(local.ProposerParams(time_budget=0.5), seed=1).propose(grant["contract"])
    assert draft is not None
    view = submit(agent, tid, grant, draft.value, wait=10)
    assert view["verdict"]["code"] == "merged", view
    robots = [int(x["id"]) for x in grant["contract"]["data"]["robots"]]
    return {r: p for r, p in zip(robots, draft.value, strict=True) if p is not None}


def test_changes_name_exactly_the_robots_that_merged(coordinator: Coordinator) -> None:
    task, a, b = routing_task(coordinator)
    tid = task["id"]
    base = lease(b, tid)["version"]  # b's search is on this head
    nothing = b.get(f"/v1/tasks/{tid}/changes", params={"since": base}).json()
    assert nothing == {"version": base, "since": base, "changes": None}  # (from now on heads are kept)
    written = merge_an_answer(a, tid)

    r = b.get(f"/v1/tasks/{tid}/changes", params={"since": base})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["since"] == base and got["version"] > base
    head = coordinator.admin.get(f"/v1/tasks/{tid}/solution").json()["solution"]["paths"]
    changed = {int(k): v for k, v in got["changes"]["paths"].items()}
    assert changed and set(changed) <= set(written)  # robots a put back to their paths are not news
    for robot, path in changed.items():
        assert path == written[robot] == head[robot]

    again = b.get(f"/v1/tasks/{tid}/changes", params={"since": got["version"]}).json()
    assert again == {"version": got["version"], "since": got["version"], "changes": None}


def test_heads_are_kept_from_the_first_lease_where_the_kind_writes_contracts_since(
    coordinator: Coordinator,
) -> None:
    """Heads are kept from a task's first ask on, or its first lease when the kind may write a contract since
    an agent's last (routing's ``ContractDeltas``): the head a lease was on is still told from."""
    task, a, b = routing_task(coordinator)
    tid = task["id"]
    base = lease(b, tid)["version"]
    merge_an_answer(a, tid)
    told = b.get(f"/v1/tasks/{tid}/changes", params={"since": base})
    assert told.status_code == 200 and told.json()["changes"]["paths"]


def test_a_version_the_coordinator_no_longer_keeps_is_gone(
    coordinator: Coordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(BuiltTask, "KEPT", 1)
    task, a, b = routing_task(coordinator)
    tid = task["id"]
    base = lease(b, tid)["version"]
    assert b.get(f"/v1/tasks/{tid}/changes", params={"since": base}).status_code == 200
    merge_an_answer(a, tid)
    err = error_of(b.get(f"/v1/tasks/{tid}/changes", params={"since": base}), 409, "version_gone")
    assert err["since"] == base and err["version"] > base


def test_bad_versions_and_tokens_are_refused(coordinator: Coordinator) -> None:
    task, _a, b = routing_task(coordinator)
    tid = task["id"]
    version = lease(b, tid)["version"]
    error_of(b.get(f"/v1/tasks/{tid}/changes", params={"since": version + 5}), 404, "no_such_version")
    assert b.get(f"/v1/tasks/{tid}/changes", params={"since": -1}).status_code == 422
    assert b.get(f"/v1/tasks/{tid}/changes").status_code == 422
    error_of(coordinator.client().get(f"/v1/tasks/{tid}/changes", params={"since": 0}), 401, "unauthorized")


def test_a_kind_without_head_changes_says_so(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 2, "dim": 2, "coupling": 0.0})
    tid = task["id"]
    agent, _ = coordinator.join(task)
    assert propose(agent, tid, lease(agent, tid)).json()["verdict"]["code"] == "merged"
    error_of(agent.get(f"/v1/tasks/{tid}/changes", params={"since": 0}), 404, "not_offered")
