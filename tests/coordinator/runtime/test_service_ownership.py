"""An agent writes only what it leased, over HTTP, for every kind (issue 33).

An agent holding block b's lease submits a value that writes another block's elements (that block's own
heuristic draft: it would improve the objective if it were let through). The coordinator refuses it with
``outside_lease`` before scoring, in rounds and in async mode, and the solution stays as it was.

How a foreign write is expressed depends on the kind's wire value. Job-shop and sqlplan values name their
jobs and queries. A routing value is a list of paths in the order of the block's robots, but a path names its
robot by its start cell (starts are distinct), so another block's paths are another block's robots. A
quadratic value is d numbers written onto the leased block's slice by position: it cannot name another
coordinate, so the only ways to aim at one are to name another block (refused by the lease, 403) or to send
more numbers (refused as ``bad_shape``); both are checked here too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tasks import Draft, Task, create_task, kind_class
from tests.conftest import Coordinator
from tests.coordinator.api.test_service_api import error_of, lease, propose, submit

NAMING_KINDS = {
    "jobshop": {"instance": "ft06", "blocks": 3, "exact_limit": 0},
    # the kind's own example (24 robots in 6 blocks), its leases a block's share from the start: a whole-plan
    # lease (the default) or an opening one holds every robot, and nothing is foreign to it
    "routing": {
        "map": "random-32-32-10",
        "robots": 24,
        "blocks": 6,
        "exact_limit": 0,
        "initial": "shortest",
        "lease_robots": 4,
        "opening": False,
    },
    "sqlplan": None,
}


GROUPINGS = {"blocks", "groups"}
"""Keys of a kind's solution that say how its elements are grouped into blocks, not what they are."""


def params_of(kind: str) -> dict[str, Any]:
    given = NAMING_KINDS[kind]
    cls = kind_class(kind)
    values = dict(cls.example if given is None else given)
    return {k: v for k, v in values.items() if k in cls.Params.model_fields}


def knobs_of(kind: str) -> dict[str, Any]:
    cls = kind_class(kind)
    return {k: v for k, v in cls.example.items() if k in cls.ProposerParams.model_fields}


def draft_for(task: Task[Any], kind: str, state: Any, block: int) -> Draft | None:
    knobs = task.ProposerParams.model_validate(knobs_of(kind))
    contract = {"block": block, "version": 0, "budget": {}, "data": task.contract(state, block)}
    return task.make_proposer(knobs, seed=1).propose(contract)


def foreign_value(kind: str, leased: int) -> tuple[int, Any]:
    """(block c, a wire value that writes c's elements): c's heuristic draft where it names c's elements (an
    sqlplan draft may only add an index, which every block may), else c's current value. Checked in process:
    well-formed as the leased block's value, and writing elements the leased block does not hold."""
    task = create_task(kind, params_of(kind))
    state = task.initial_state()
    found: list[tuple[int, Any]] = []
    for c in (c for c in task.blocks() if c != leased):
        draft = draft_for(task, kind, state, c)
        for wire in ([draft.value] if draft else []) + [task.encode_value(task.block_value(state, c))]:
            wire = json.loads(json.dumps(wire))
            value = task.validate(leased, wire)  # well-formed: only ownership can refuse it
            if task.written_elements(state, leased, value) - task.block_elements(state, leased):
                found.append((c, wire))
                break
        if found and draft is not None and found[-1][1] == json.loads(json.dumps(draft.value)):
            return found[-1]
    assert found, f"{kind}: no value of another block names its elements"
    return found[0]


def solution_of(coord: Coordinator, tid: str) -> tuple[Any, float]:
    """The solution as users read it, and its objective (not the version: a round that merged nothing may
    commit a regrouping, the same solution with its blocks formed anew)."""
    r = coord.admin.get(f"/v1/tasks/{tid}/solution")
    assert r.status_code == 200, r.text
    solution = {k: v for k, v in r.json()["solution"].items() if k not in GROUPINGS}
    return solution, r.json()["objective"]


@pytest.mark.parametrize("kind", sorted(NAMING_KINDS))
@pytest.mark.parametrize("mode", ["rounds", "async"])
def test_a_foreign_write_is_refused_and_nothing_of_it_merges(
    coordinator: Coordinator, kind: str, mode: str
) -> None:
    task = coordinator.create_task(kind=kind, params=params_of(kind), mode=mode)
    tid = task["id"]
    agent, _ = coordinator.join(task, "intruder")
    grant = lease(agent, tid)
    other, value = foreign_value(kind, grant["block"])
    before = solution_of(coordinator, tid)
    view = submit(agent, tid, grant, value, wait=30)
    verdict = view["verdict"]
    assert verdict is not None and verdict["status"] == "rejected", view
    assert verdict["code"] == "outside_lease", verdict
    assert f"block {grant['block']}" in verdict["reason"] and "outside its lease" in verdict["reason"]
    assert verdict["delta"] is None  # refused before it was scored
    assert solution_of(coordinator, tid) == before, f"block {other}'s draft merged"
    counts = coordinator.admin.get(f"/v1/tasks/{tid}/report").json()["proposals"]
    assert counts["accepted"] == 0 and counts["rejected"] == 1, counts


def test_jobshop_own_block_draft_still_merges_after_a_refused_foreign_write(coordinator: Coordinator) -> None:
    """The check refuses what is foreign, not everything: the same agent's draft for its own jobs merges."""
    kind = "jobshop"
    task = coordinator.create_task(kind=kind, params=params_of(kind))
    tid = task["id"]
    agent, _ = coordinator.join(task, "agent")
    grant = lease(agent, tid)
    _, value = foreign_value(kind, grant["block"])
    assert submit(agent, tid, grant, value, wait=30)["verdict"]["code"] == "outside_lease"
    again = lease(agent, tid)  # (the empty round may have regrouped the jobs: the contract says which)
    local = create_task(kind, params_of(kind))
    knobs = local.ProposerParams.model_validate(knobs_of(kind))
    draft = local.make_proposer(knobs, seed=1).propose(again["contract"])
    assert draft is not None
    verdict = submit(agent, tid, again, draft.value, wait=30)["verdict"]
    assert verdict["code"] == "merged", verdict
    assert solution_of(coordinator, tid)[1] < local.objective(local.initial_state())


def test_quadratic_cannot_name_another_blocks_coordinates(coordinator: Coordinator) -> None:
    """A quadratic value lands on the leased slice by position; aiming past it is refused, nothing merges."""
    task = coordinator.create_task(params={"blocks": 3, "dim": 2})
    tid = task["id"]
    agent, _ = coordinator.join(task, "intruder")
    grant = lease(agent, tid)
    before = solution_of(coordinator, tid)
    other = (grant["block"] + 1) % 3
    error_of(propose(agent, tid, grant, block=other), 403, "wrong_block")  # another block: the lease refuses
    longer = submit(agent, tid, grant, [1.0] * 4, wait=10)["verdict"]  # its slice and the next one's
    assert longer["status"] == "rejected" and longer["code"] == "bad_shape", longer
    assert solution_of(coordinator, tid) == before
    local = create_task("quadratic", {"blocks": 3, "dim": 2})
    value = local.validate(grant["block"], [1.0, 2.0])
    state = local.initial_state()
    assert local.written_elements(state, grant["block"], value) == local.block_elements(state, grant["block"])
    assert local.block_elements(state, 0).isdisjoint(local.block_elements(state, 1))


def test_a_number_json_carries_but_a_float_cannot_is_refused_not_a_crash(coordinator: Coordinator) -> None:
    """A 400-digit integer in a value (JSON allows it) is refused as ``bad_value``; the task goes on."""
    task = coordinator.create_task(params={"blocks": 2, "dim": 2})
    tid = task["id"]
    agent, _ = coordinator.join(task, "agent")
    grant = lease(agent, tid)
    body = json.dumps(
        {
            "lease_id": grant["lease_id"],
            "block": grant["block"],
            "base_version": grant["version"],
            "predicted_improvement": 1.0,
        }
    )
    raw = body[:-1] + ', "value": [1' + "0" * 400 + ", 0]}"
    r = agent.post(
        f"/v1/tasks/{tid}/proposals",
        content=raw,
        params={"wait": 10},
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["verdict"]["code"] == "bad_value", r.json()
    assert propose(agent, tid, lease(agent, tid)).json()["verdict"]["code"] == "merged"
