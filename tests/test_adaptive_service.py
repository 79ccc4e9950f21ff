"""Adaptive block selection through the real HTTP service: routing's generators chosen by UCB1, the learned
weights in the task view, the rounds, the report and /metrics; lease order learns and shows nothing."""

from __future__ import annotations

from typing import Any

from tests.conftest import Coordinator
from tests.test_service_api import error_of, lease

PARAMS = {"map": "random-32-32-10", "robots": 30, "blocks": 2, "exact_limit": 0}


def _run_rounds(coordinator: Coordinator, tid: str, task: dict[str, Any], rounds: int) -> None:
    """Two agents run the kind's own heuristic on their leases, round after round."""
    from tasks.registry import create_task

    local = create_task("routing", PARAMS)
    heuristic = local.make_proposer(local.ProposerParams(time_budget=0.3), seed=1)
    agents = [coordinator.join(task, name=n)[0] for n in ("a", "b")]
    for n in range(rounds):
        grants = [(agent, lease(agent, tid)) for agent in agents]
        for agent, grant in grants:
            draft = heuristic.propose(grant["contract"])
            if draft is None:
                body = {"block": grant["block"], "base_version": grant["version"], "outcome": "declined"}
                r = agent.post(f"/v1/tasks/{tid}/leases/{grant['lease_id']}/abandon", json=body)
            else:
                body = {
                    "lease_id": grant["lease_id"],
                    "block": grant["block"],
                    "base_version": grant["version"],
                    "value": draft.value,
                    "predicted_improvement": draft.predicted_improvement,
                    "usage": {"calls": 1, "seconds": 0.3},
                }
                r = agent.post(f"/v1/tasks/{tid}/proposals", json=body, params={"wait": 0})
            assert r.status_code in (200, 202), r.text
        coordinator.wait_for(tid, lambda v, n=n: v["round"] > n or v["status"] != "running", timeout=30)


def _rows(coordinator: Coordinator, tid: str) -> list[dict[str, Any]]:
    got = coordinator.admin.get(f"/v1/tasks/{tid}/rounds").json()
    return list(got["rounds"] if isinstance(got, dict) else got)


def _weights(metrics: str, tid: str) -> list[str]:
    return [
        line
        for line in metrics.splitlines()
        if line.startswith("blockopt_neighbourhood_weight{") and tid in line
    ]


def test_ucb1_picks_generators_and_shows_its_weights(coordinator: Coordinator) -> None:
    task = coordinator.create_task(
        kind="routing",
        params=PARAMS,
        stop={"stall_rounds": 50},
        selection={"policy": "ucb1", "every_round": True},
    )
    tid = task["id"]
    _run_rounds(coordinator, tid, task, 4)
    rows = _rows(coordinator, tid)
    assert len(rows) >= 4
    formed = [r["selection"]["formed"] for r in rows]
    assert len(set(formed[:4])) == 4  # UCB1 tries a new arm each round while some are untried (5 arms)
    assert all(r["selection"]["seconds"] > 0 for r in rows if r["proposals"])
    view = coordinator.admin.get(f"/v1/tasks/{tid}").json()
    sel = view["selection"]
    assert sel["policy"] == "ucb1"
    assert set(sel["generators"]) == {"partition", "interaction", "agent", "intersection", "random"}
    assert sum(g["pulls"] for g in sel["generators"].values()) == len(rows)
    report = coordinator.admin.get(f"/v1/tasks/{tid}/report").json()
    assert report["selection"]["generators"].keys() == sel["generators"].keys()
    metrics = coordinator.admin.get("/metrics").text
    tried = [g for g, v in sel["generators"].items() if v["weight"] is not None]
    assert len(_weights(metrics, tid)) == len(tried) > 0


def test_lease_order_learns_nothing_and_shows_nothing(coordinator: Coordinator) -> None:
    task = coordinator.create_task(kind="routing", params=PARAMS, stop={"stall_rounds": 50})
    tid = task["id"]
    _run_rounds(coordinator, tid, task, 2)
    assert all(r["selection"] is None for r in _rows(coordinator, tid))
    assert coordinator.admin.get(f"/v1/tasks/{tid}").json()["selection"] is None
    assert coordinator.admin.get(f"/v1/tasks/{tid}/report").json()["selection"] is None
    assert _weights(coordinator.admin.get("/metrics").text, tid) == []


def test_bad_selection_is_refused(coordinator: Coordinator) -> None:
    r = coordinator.admin.post("/v1/tasks", json={"kind": "quadratic", "selection": {"policy": "thompson"}})
    assert r.status_code == 422, r.text
    r = coordinator.admin.post(
        "/v1/tasks", json={"kind": "quadratic", "selection": {"policy": "ucb1", "generators": []}}
    )
    assert r.status_code == 422 and "generators" in r.text, r.text
    r = coordinator.admin.post(
        "/v1/tasks",
        json={"kind": "routing", "params": PARAMS, "selection": {"generators": ["nope", "random"]}},
    )
    err = error_of(r, 400, "invalid_request")
    assert "'nope'" in err["message"] and "intersection" in err["message"], err


def _abandon(agent: Any, tid: str, grant: dict[str, Any]) -> None:
    body = {"block": grant["block"], "base_version": grant["version"], "outcome": "declined"}
    r = agent.post(f"/v1/tasks/{tid}/leases/{grant['lease_id']}/abandon", json=body)
    assert r.status_code == 200, r.text


def test_hold_makes_an_agent_that_found_nothing_wait_for_the_round(coordinator: Coordinator) -> None:
    task = coordinator.create_task(
        kind="routing", params=PARAMS, stop={"stall_rounds": 50}, selection={"policy": "alns", "hold": True}
    )
    tid = task["id"]
    a, b = (coordinator.join(task, name=n)[0] for n in ("a", "b"))
    first = lease(a, tid)
    held = lease(b, tid)
    _abandon(a, tid, first)
    err = error_of(a.post(f"/v1/tasks/{tid}/leases"), 429, "no_block_available")
    assert "found nothing" in err["message"]  # b still searches: the round is open
    _abandon(b, tid, held)  # every leased block answered: the round closes, new blocks are formed
    coordinator.wait_for(tid, lambda v: v["round"] >= 1, timeout=30)
    assert lease(a, tid)["version"] >= 1


def test_without_hold_an_agent_that_found_nothing_leases_again_at_once(coordinator: Coordinator) -> None:
    """The failing input of the rule above: the same steps without ``hold`` are never refused."""
    task = coordinator.create_task(
        kind="routing", params=PARAMS, stop={"stall_rounds": 50}, selection={"policy": "alns"}
    )
    tid = task["id"]
    a, b = (coordinator.join(task, name=n)[0] for n in ("a", "b"))
    first = lease(a, tid)
    lease(b, tid)
    _abandon(a, tid, first)
    assert lease(a, tid)["block"] == first["block"]
