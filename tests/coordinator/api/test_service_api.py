"""The HTTP API on a real uvicorn server: the protocol, and every error status with its body."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN, Coordinator


def error_of(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert err["code"] == code, body
    assert isinstance(err["message"], str) and err["message"], body
    return err


def no_secrets(r: httpx.Response, *secrets: str) -> None:
    for secret in (ADMIN, *secrets):
        assert secret not in r.text


def lease(agent: httpx.Client, task_id: str) -> dict[str, Any]:
    r = agent.post(f"/v1/tasks/{task_id}/leases")
    assert r.status_code == 201, r.text
    return r.json()


def propose(
    agent: httpx.Client, task_id: str, grant: dict[str, Any], wait: float = 5.0, **over: Any
) -> httpx.Response:
    """Submit the exact block minimizer computed from the contract (the heuristic, by hand)."""
    import numpy as np

    data = grant["contract"]["data"]
    a = np.asarray(data["local_objective"]["A"])
    b = np.asarray(data["local_objective"]["b"])
    y = np.linalg.solve(a, b - np.asarray(data["correction"]))
    body = {
        "lease_id": grant["lease_id"],
        "block": grant["block"],
        "base_version": grant["version"],
        "value": y.tolist(),
        "predicted_improvement": 1.0,
        "usage": {"calls": 1, "model": "by-hand"},
    }
    body.update(over)
    return agent.post(f"/v1/tasks/{task_id}/proposals", json=body, params={"wait": wait})


def submit(
    agent: httpx.Client, task_id: str, grant: dict[str, Any], value: Any, wait: float = 0
) -> dict[str, Any]:
    """Submit ``value`` for the lease ``grant``; the proposal view (its verdict once ``wait`` allows)."""
    body = {
        "lease_id": grant["lease_id"],
        "block": grant["block"],
        "base_version": grant["version"],
        "value": value,
        "predicted_improvement": 1.0,
    }
    r = agent.post(f"/v1/tasks/{task_id}/proposals", json=body, params={"wait": wait})
    assert r.status_code in (200, 202), r.text
    return dict(r.json())


def test_protocol_round_trip(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 2, "dim": 2, "coupling": 0.0})
    tid = task["id"]
    view = coordinator.admin.get(f"/v1/tasks/{tid}").json()
    for key in (
        "id",
        "kind",
        "status",
        "round",
        "objective",
        "gap",
        "feasible",
        "reference",
        "version",
        "merge_policy",
    ):
        assert key in view
    assert view["status"] == "running" and view["round"] == 0
    a1, joined = coordinator.join(task, "one")
    a2, _ = coordinator.join(task, "two")
    assert joined["task"]["kind"] == "quadratic" and joined["token"] != task["join_token"]
    g1, g2 = lease(a1, tid), lease(a2, tid)
    assert {g1["block"], g2["block"]} == {0, 1}
    assert g1["contract"]["block"] == g1["block"] and "budget" in g1["contract"] and "data" in g1["contract"]
    first = propose(a1, tid, g1, wait=0)
    assert first.status_code == 202 and first.json()["status"] == "pending"  # round waits for the other lease
    second = propose(a2, tid, g2)
    assert second.status_code == 200 and second.json()["verdict"]["code"] == "merged"
    polled = a1.get(f"/v1/tasks/{tid}/proposals/{first.json()['id']}", params={"wait": 5})
    assert polled.status_code == 200 and polled.json()["status"] == "accepted"
    # separable blocks, exact minimizers: one round reaches the optimum and the task converges
    view = coordinator.wait_for(tid, lambda v: v["status"] != "running", timeout=20)
    assert view["status"] == "optimal" and view["relative_gap"] < 1e-10 and view["version"] == 1
    rounds = coordinator.admin.get(f"/v1/tasks/{tid}/rounds").json()["rounds"]
    assert len(rounds) == 1
    for key in (
        "round",
        "objective",
        "gap",
        "merged",
        "interfering",
        "kappa",
        "gamma",
        "delta",
        "predicted_gap",
        "hit",
        "a_priori_rhs",
        "a_priori_held",
    ):
        assert key in rounds[0]
    assert (
        rounds[0]["merged"] == 2 and rounds[0]["predicted_gap"] is None
    )  # no earlier rounds to forecast from
    report = coordinator.admin.get(f"/v1/tasks/{tid}/report").json()
    assert report["status"] == "optimal" and report["proposals"]["accepted"] == 2
    assert report["usage"]["calls"] == 2 and report["checks"]["one_step"]["rounds"] == 0
    solution = coordinator.admin.get(f"/v1/tasks/{tid}/solution").json()
    assert solution["version"] == 1 and len(solution["solution"]["x"]) == 4
    listed = coordinator.admin.get("/v1/tasks").json()["tasks"]
    assert [t["id"] for t in listed] == [tid]


def test_next_lease_comes_with_the_verdict(coordinator: Coordinator) -> None:
    """``?next_lease=true``: the verdict response carries the agent's next lease (one request per proposal)."""
    task = coordinator.create_task(
        params={"blocks": 3, "dim": 2, "coupling": 0.3}, stop={"relative_gap": 0.0, "stall_rounds": 100}
    )
    tid = task["id"]
    a1, j1 = coordinator.join(task, "one")
    a2, j2 = coordinator.join(task, "two")
    g1, g2 = lease(a1, tid), lease(a2, tid)
    first = propose(a1, tid, g1, wait=0)
    assert first.status_code == 202 and first.json()["next_lease"] is None  # no verdict yet: no lease
    body = propose(a2, tid, g2, wait=0).json()  # the round closes (both leased blocks submitted)
    r = a2.get(f"/v1/tasks/{tid}/proposals/{body['id']}", params={"wait": 5, "next_lease": "true"})
    assert r.status_code == 200 and r.json()["verdict"] is not None
    n2 = r.json()["next_lease"]
    assert n2 is not None and n2["agent_id"] == j2["agent_id"] and n2["contract"]["block"] == n2["block"]
    assert n2["version"] == coordinator.admin.get(f"/v1/tasks/{tid}").json()["version"]
    plain = a1.get(f"/v1/tasks/{tid}/proposals/{first.json()['id']}", params={"wait": 5})
    assert plain.status_code == 200 and plain.json()["next_lease"] is None  # opt-in: old clients see null
    g3 = lease(a1, tid)
    assert g3["block"] != n2["block"]
    later = propose(a2, tid, n2, wait=0)  # the folded-in lease is a real lease
    assert later.status_code in (200, 202), later.text
    sub = a1.post(
        f"/v1/tasks/{tid}/proposals",
        params={"wait": 5, "next_lease": "true"},
        json={
            "lease_id": g3["lease_id"],
            "block": g3["block"],
            "base_version": g3["version"],
            "value": [0.0, 0.0],
            "predicted_improvement": 0.0,
        },
    )
    assert sub.status_code == 200, sub.text
    assert sub.json()["next_lease"] is not None and sub.json()["next_lease"]["agent_id"] == j1["agent_id"]


def test_an_abandoned_lease_brings_the_next_lease_when_asked(coordinator: Coordinator) -> None:
    """``POST .../abandon?next_lease=true``: an agent whose search found nothing leases again in the same
    request, a real lease it holds; without the flag, or with no block free, ``next_lease`` is null."""
    task = coordinator.create_task(params={"blocks": 2, "dim": 2}, mode="async")
    tid = task["id"]
    a1, j1 = coordinator.join(task, "one")
    a2, _ = coordinator.join(task, "two")

    def abandon(agent: httpx.Client, grant: dict[str, Any], **params: str) -> dict[str, Any]:
        body = {"block": grant["block"], "base_version": grant["version"], "outcome": "declined"}
        r = agent.post(f"/v1/tasks/{tid}/leases/{grant['lease_id']}/abandon", json=body, params=params)
        assert r.status_code == 200, r.text
        return dict(r.json())

    g1 = lease(a1, tid)
    plain = abandon(a1, g1)
    assert plain["recorded"] is True and plain["next_lease"] is None  # opt-in: old clients see null
    g1 = lease(a1, tid)
    got = abandon(a1, g1, next_lease="true")
    n1 = got["next_lease"]
    assert n1 is not None and n1["agent_id"] == j1["agent_id"] and n1["lease_id"] != g1["lease_id"]
    assert n1["contract"]["block"] == n1["block"]
    held = lease(a2, tid)  # the other block: a1's next lease is held, not just shown
    assert held["block"] != n1["block"]
    assert propose(a1, tid, n1, wait=0).status_code in (200, 202)  # and it is a real lease
    assert coordinator.admin.post(f"/v1/tasks/{tid}/stop").status_code == 200
    ended = abandon(a2, held, next_lease="true")  # still recorded: the search was spent
    assert ended["recorded"] is True and ended["next_lease"] is None
    error_of(a2.post(f"/v1/tasks/{tid}/leases"), 409, "task_finished")  # POST /leases says why


def test_events_stream_rounds_then_status(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 1, "dim": 2})
    tid = task["id"]
    agent, _ = coordinator.join(task)
    assert propose(agent, tid, lease(agent, tid)).status_code == 200
    coordinator.wait_for(tid, lambda v: v["status"] == "optimal", timeout=20)
    events = []
    with coordinator.admin.stream("GET", f"/v1/tasks/{tid}/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        kind = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                events.append((kind, json.loads(line[6:])))
    assert [k for k, _ in events] == ["round", "forecast", "status"]
    assert events[0][1]["merged"] == 1 and events[2][1]["status"] == "optimal"
    assert {"limit", "remaining", "eta_rounds", "eta_seconds", "gain_per_1k_tokens"} <= set(events[1][1])


def test_stop(coordinator: Coordinator) -> None:
    task = coordinator.create_task()
    r = coordinator.admin.post(f"/v1/tasks/{task['id']}/stop")
    assert r.status_code == 200 and r.json()["status"] == "stopped"
    agent, _ = coordinator.client(task["join_token"]), None
    error_of(agent.post(f"/v1/tasks/{task['id']}/agents", json={}), 409, "task_finished")


def test_401_unauthorized(coordinator: Coordinator) -> None:
    anon = coordinator.client()
    error_of(anon.post("/v1/tasks", json={"kind": "quadratic"}), 401, "unauthorized")
    wrong = coordinator.client("not-the-admin-token")
    r = wrong.post("/v1/tasks", json={"kind": "quadratic"})
    error_of(r, 401, "unauthorized")
    no_secrets(r, "not-the-admin-token")
    task = coordinator.create_task()
    r = coordinator.client("join_wrong").post(f"/v1/tasks/{task['id']}/agents", json={})
    error_of(r, 401, "unauthorized")
    no_secrets(r, task["join_token"], "join_wrong")
    error_of(anon.post(f"/v1/tasks/{task['id']}/leases"), 401, "unauthorized")
    # an agent token is valid for its own task only
    other = coordinator.create_task()
    agent, joined = coordinator.join(task)
    r = agent.post(f"/v1/tasks/{other['id']}/leases")
    error_of(r, 401, "unauthorized")
    no_secrets(r, joined["token"])
    # a join token is not an agent token
    error_of(
        coordinator.client(task["join_token"]).post(f"/v1/tasks/{task['id']}/leases"), 401, "unauthorized"
    )


def test_403_wrong_block_and_foreign_lease(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 3, "dim": 2})
    tid = task["id"]
    a1, _ = coordinator.join(task, "one")
    a2, _ = coordinator.join(task, "two")
    g1 = lease(a1, tid)
    err = error_of(propose(a1, tid, g1, block=(g1["block"] + 1) % 3), 403, "wrong_block")
    assert err["leased_block"] == g1["block"]
    error_of(propose(a2, tid, g1), 403, "forbidden")  # a2 submits on a1's lease
    error_of(a2.post(f"/v1/tasks/{tid}/leases/{g1['lease_id']}/renew"), 403, "forbidden")


def test_403_admin_disabled(coordinator_factory: Any) -> None:
    from coordinator.settings import ServiceSettings

    coord = coordinator_factory()
    # a service without an admin token refuses administration rather than allowing it
    from prometheus_client import CollectorRegistry

    import coordinator.api.main as app_module
    from coordinator.api.embedded import EmbeddedServer
    from coordinator.store import MemoryStore

    with EmbeddedServer(
        app_module.create_app(ServiceSettings(), MemoryStore(), CollectorRegistry())
    ) as server:
        r = httpx.post(
            f"{server.url}/v1/tasks", json={"kind": "quadratic"}, headers={"Authorization": "Bearer x"}
        )
        error_of(r, 403, "forbidden")
    assert coord.admin.get("/healthz").status_code == 200


def test_404_unknown_things(coordinator: Coordinator) -> None:
    error_of(coordinator.admin.get("/v1/tasks/t-nope"), 404, "not_found")
    error_of(coordinator.admin.get("/v1/tasks/t-nope/rounds"), 404, "not_found")
    error_of(coordinator.admin.get("/v1/no/such/route"), 404, "not_found")
    error_of(coordinator.client("x").post("/v1/tasks/t-nope/leases"), 404, "not_found")
    task = coordinator.create_task()
    agent, _ = coordinator.join(task)
    error_of(agent.get(f"/v1/tasks/{task['id']}/proposals/p-nope"), 404, "not_found")


def test_405_method(coordinator: Coordinator) -> None:
    error_of(coordinator.admin.delete("/v1/tasks"), 405, "method_not_allowed")


def test_409_stale_lease_and_finished_task(coordinator_factory: Any) -> None:
    coord = coordinator_factory(lease_ttl=0.3, round_deadline=0.5)
    task = coord.create_task(params={"blocks": 2, "dim": 2})
    tid = task["id"]
    agent, _ = coord.join(task)
    grant = lease(agent, tid)
    coord.wait_for(tid, lambda v: v["leases"] == 0, timeout=10)  # the scheduler expired it
    err = error_of(propose(agent, tid, grant), 409, "lease_expired")
    assert err["lease_id"] == grant["lease_id"]
    error_of(agent.post(f"/v1/tasks/{tid}/leases/{grant['lease_id']}/renew"), 409, "lease_expired")
    coord.admin.post(f"/v1/tasks/{tid}/stop")
    error_of(agent.post(f"/v1/tasks/{tid}/leases"), 409, "task_finished")


def test_409_stale_base_verdict(coordinator: Coordinator) -> None:
    """A straggler whose block changed since its base is rejected as stale by the engine's rule."""
    task = coordinator.create_task(params={"blocks": 2, "dim": 2}, mode="rounds")
    tid = task["id"]
    a1, _ = coordinator.join(task, "one")
    g1 = lease(a1, tid)
    assert propose(a1, tid, g1).json()["verdict"]["code"] == "merged"  # only lease: quorum of one
    g2 = lease(a1, tid)
    assert g2["version"] == 1
    stale = propose(a1, tid, g2, base_version=0)
    if g2["block"] == g1["block"]:
        assert stale.json()["verdict"]["code"] == "stale_base"
    else:
        assert stale.json()["verdict"]["code"] in (
            "merged",
            "not_improving",
        )  # rebased: its block is unchanged


def test_413_body_too_large(coordinator_factory: Any) -> None:
    coord = coordinator_factory(max_body_bytes=2048)
    task = coord.create_task()
    agent, _ = coord.join(task)
    grant = lease(agent, task["id"])
    error_of(propose(agent, task["id"], grant, value=[0.0] * 5000), 413, "payload_too_large")

    # chunked (no Content-Length) is counted too
    def chunks() -> Any:
        for _ in range(10):
            yield b" " * 1000

    r = agent.post(
        f"/v1/tasks/{task['id']}/proposals", content=chunks(), headers={"Content-Type": "application/json"}
    )
    error_of(r, 413, "payload_too_large")


def test_400_and_422_invalid(coordinator: Coordinator) -> None:
    err = error_of(coordinator.admin.post("/v1/tasks", json={"kind": "nosuchkind"}), 400, "invalid_request")
    assert "nosuchkind" in err["message"]
    err = error_of(
        coordinator.admin.post("/v1/tasks", json={"kind": "quadratic", "params": {"blocks": 0}}),
        400,
        "invalid_request",
    )
    assert err["field"] == "params.blocks"
    error_of(
        coordinator.admin.post("/v1/tasks", json={"kind": "quadratic", "params": {"colour": 1}}),
        400,
        "invalid_request",
    )
    err = error_of(
        coordinator.admin.post("/v1/tasks", json={"kind": "quadratic", "merge_policy": "yolo"}),
        422,
        "validation_error",
    )
    assert "merge_policy" in err["message"]
    error_of(
        coordinator.admin.post(
            "/v1/tasks", content=b"{not json", headers={"Content-Type": "application/json"}
        ),
        422,
        "validation_error",
    )
    task = coordinator.create_task()
    agent, _ = coordinator.join(task)
    grant = lease(agent, task["id"])
    error_of(propose(agent, task["id"], grant, block=-1), 422, "validation_error")
    # a structurally bad value is stored, then rejected by the task's checks with a reason
    r = propose(agent, task["id"], grant, value=[1.0])
    assert r.status_code == 200 and r.json()["verdict"]["code"] == "bad_shape"


def test_429_no_block_available(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 1, "dim": 2})
    a1, _ = coordinator.join(task, "one")
    a2, _ = coordinator.join(task, "two")
    lease(a1, task["id"])
    r = a2.post(f"/v1/tasks/{task['id']}/leases")
    err = error_of(r, 429, "no_block_available")
    assert err["retry_after"] > 0 and "retry-after" in r.headers


def test_429_rate_limited(coordinator_factory: Any) -> None:
    coord = coordinator_factory(rate_per_agent=0.5, rate_burst=3)
    task = coord.create_task()
    agent, _ = coord.join(task)
    codes = [agent.get(f"/v1/tasks/{task['id']}/proposals/p-x").status_code for _ in range(4)]
    assert codes[:3] == [404, 404, 404]
    r = agent.get(f"/v1/tasks/{task['id']}/proposals/p-x")
    err = error_of(r, 429, "rate_limited")
    assert err["retry_after"] > 0 and int(r.headers["retry-after"]) >= 1


def test_429_budget_exceeded(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 2, "dim": 2}, budgets={"calls": 1})
    tid = task["id"]
    agent, _ = coordinator.join(task)
    grant = lease(agent, tid)
    assert grant["contract"]["budget"]["calls"] == 1
    assert propose(agent, tid, grant).status_code in (200, 202)
    coordinator.wait_for(tid, lambda v: v["status"] != "running", timeout=20)
    err = error_of(agent.post(f"/v1/tasks/{tid}/leases"), 429, "budget_exceeded")
    assert "budget" in err["message"]
    assert coordinator.admin.get(f"/v1/tasks/{tid}").json()["status"] == "budget_exhausted"


def test_the_time_limit_counts_the_first_plan(
    coordinator: Coordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kind that takes a while to make its first plan spends that time of the task's seconds budget, as a
    solver's initial solution counts against its own time limit (the embedded server shares this process)."""
    from tasks.quadratic import QuadraticTask

    slow = QuadraticTask.initial_state

    def initial_state(self: QuadraticTask) -> Any:
        time.sleep(2.0)
        return slow(self)

    monkeypatch.setattr(QuadraticTask, "initial_state", initial_state)
    asked = time.time()
    task = coordinator.create_task(params={"blocks": 2, "dim": 2}, budgets={"seconds": 10})
    assert task["status"] == "preparing"  # answered after prepare_wait (1 s), the first plan still going
    coordinator.wait_for(task["id"], lambda v: v["status"] == "running")
    agent, _ = coordinator.join(task)
    grant = lease(agent, task["id"])
    created_at = coordinator.admin.get(f"/v1/tasks/{task['id']}").json()["created_at"]
    # the old clock started after the first plan: >= asked + 2.0; a loaded machine took up to 0.7 s to
    # stamp the request (a fresh clone's full run), so the margin is wide
    assert created_at < asked + 1.5
    assert grant["contract"]["budget"]["seconds"] <= 8.5


def test_a_task_with_a_time_budget_gets_no_default_rounds_budget(coordinator: Coordinator) -> None:
    """The service's ``default_max_rounds`` bounds a task that sets no budget at all; a time budget ends a
    task by itself (a 120 s routing run of one agent closed 500 rounds in 66-113 s)."""
    timed = coordinator.create_task(params={"blocks": 2, "dim": 2}, budgets={"seconds": 30})
    unbounded = coordinator.create_task(params={"blocks": 2, "dim": 2})
    view = coordinator.admin.get(f"/v1/tasks/{timed['id']}").json()
    assert view["budgets"]["rounds"] is None and view["budgets"]["seconds"] == 30
    assert coordinator.admin.get(f"/v1/tasks/{unbounded['id']}").json()["budgets"]["rounds"] is not None


def test_rounds_budget(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 2, "dim": 2, "coupling": 0.9}, budgets={"rounds": 1})
    tid = task["id"]
    agent, _ = coordinator.join(task)
    propose(agent, tid, lease(agent, tid))
    view = coordinator.wait_for(tid, lambda v: v["status"] != "running", timeout=20)
    assert view["status"] == "budget_exhausted" and view["round"] == 1


def test_health_and_docs(coordinator: Coordinator) -> None:
    assert coordinator.admin.get("/healthz").json() == {"status": "ok", "detail": None}
    assert coordinator.admin.get("/readyz").json()["status"] == "ready"
    spec = coordinator.admin.get("/openapi.json").json()
    assert coordinator.admin.get("/docs").status_code == 200
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            ok = op["responses"].get("200") or op["responses"].get("201") or op["responses"].get("204")
            assert ok is not None, (method, path)
            content = ok.get("content", {})
            if method == "delete":
                continue
            media = next(iter(content.values()))
            schema = media.get("schema", {})
            ref = schema.get("$ref", "")
            has_example = "example" in media or "examples" in media
            if ref:
                model = spec["components"]["schemas"][ref.split("/")[-1]]
                has_example = has_example or "examples" in model
            assert has_example, (method, path)


def _idle_rounds(coordinator: Coordinator, task: dict[str, Any], rounds: int) -> None:
    """Two agents that lease every block and report "nothing found", round after round, until the task
    ends or ``rounds`` rounds have closed."""
    agents = [coordinator.join(task, name=f"idle-{k}")[0] for k in range(2)]
    tid = task["id"]

    def post(client: httpx.Client, url: str, **kw: Any) -> httpx.Response:
        """As an agent does: a 429 is waited out for its ``retry_after`` (quick rounds outpace the limit)."""
        while (r := client.post(url, **kw)).status_code == 429:
            time.sleep(float(r.json()["error"]["retry_after"]))
        return r

    for n in range(rounds):
        leases = [(client, post(client, f"/v1/tasks/{tid}/leases")) for client in agents]
        if any(r.status_code != 201 for _, r in leases):
            break  # the task has ended: no more leases
        for client, r in leases:
            lease = r.json()
            body = {
                "id": f"idle-{n}-{lease['block']}",
                "block": lease["block"],
                "base_version": lease["version"],
                "outcome": "declined",
                "reason": "no improving move",
            }
            r = post(client, f"/v1/tasks/{tid}/leases/{lease['lease_id']}/abandon", json=body)
            assert r.status_code == 200, r.text
        coordinator.wait_for(tid, lambda v, n=n: v["round"] > n or v["status"] != "running", timeout=20)


def test_agents_that_find_nothing_close_empty_rounds_until_the_task_converges(
    coordinator: Coordinator,
) -> None:
    """A lease that ends with "nothing found" (abandon) is a report: a quorum of them closes an empty,
    stalled round, so a task whose agents can no longer improve it converges instead of idling."""
    task = coordinator.create_task(params={"blocks": 2, "dim": 2})
    _idle_rounds(coordinator, task, 10)
    tid = task["id"]
    stall = coordinator.wait_for(
        tid, lambda v: v["status"] != "running", timeout=20
    )  # set just after the round
    assert stall["status"] == "stalled"
    rounds = coordinator.admin.get(f"/v1/tasks/{tid}/rounds").json()
    rows = rounds["rounds"] if isinstance(rounds, dict) else rounds
    assert len(rows) == 3 and all(r["accepted"] == 0 and r["proposals"] == 0 for r in rows)


def test_a_regrouping_keeps_the_blocks_agents_are_working_on(coordinator: Coordinator) -> None:
    """An empty round regroups the robots (a new version, the same objective), but a block an agent holds
    a lease on keeps its robots and its version: the work under way is not thrown away as stale."""
    from tasks.registry import create_task

    params = {"map": "random-32-32-10", "robots": 60, "blocks": 3, "exact_limit": 0, "initial": "shortest"}
    task = coordinator.create_task(kind="routing", params=params, stop={"stall_rounds": 50})
    tid = task["id"]
    a, b = (coordinator.join(task, name=n)[0] for n in ("a", "b"))
    local = create_task("routing", params)
    heuristic = local.make_proposer(local.ProposerParams(time_budget=2.0), seed=1)

    def rows() -> list[dict[str, Any]]:
        got = coordinator.admin.get(f"/v1/tasks/{tid}/rounds").json()
        return list(got["rounds"] if isinstance(got, dict) else got)

    def current(grant: dict[str, Any]) -> list[Any]:
        return [r["path"] for r in grant["contract"]["data"]["robots"]]

    # Round 0: both agents resolve their conflicts; the merged plan has robots waiting for others.
    grants = [(agent, lease(agent, tid)) for agent in (a, b)]
    drafts = [heuristic.propose(grant["contract"]) for _, grant in grants]  # both before either submits
    for (agent, grant), draft in zip(grants, drafts):
        assert draft is not None
        submit(agent, tid, grant, draft.value)
    coordinator.wait_for(tid, lambda v: v["round"] >= 1)
    assert rows()[0]["accepted"] >= 1
    # Round 1: `a` proposes nothing new while `b` holds its lease: the empty round regroups the other blocks.
    ga, gb = lease(a, tid), lease(b, tid)
    submit(a, tid, ga, current(ga))
    coordinator.wait_for(tid, lambda v: v["round"] >= 2)
    regrouped = rows()[1]
    assert regrouped["accepted"] == 0 and regrouped["regrouped"] is True
    assert (
        regrouped["version"] == rows()[0]["version"] + 1 and regrouped["objective"] == rows()[0]["objective"]
    )
    # `b`'s block kept its robots and its version: its answer, made on the old version, is still current.
    draft = heuristic.propose(gb["contract"])
    answer = submit(b, tid, gb, draft.value if draft is not None else current(gb), wait=10)
    assert answer["verdict"]["code"] in ("merged", "not_improving"), answer
    # The same answer for a block the regrouping changed is refused: a's old block moved on.
    ga2 = lease(a, tid)
    assert ga2["version"] > ga["version"] and ga2["block"] != gb["block"]
    moved = {**ga2, "version": ga["version"]}
    assert submit(a, tid, moved, current(ga2), wait=10)["verdict"]["code"] == "stale_base"


@pytest.mark.parametrize("regroup_after", ["arrival", "stalled"])
def test_async_mode_regroups_the_blocks_nobody_holds_after_an_arrival(
    coordinator: Coordinator, regroup_after: str
) -> None:
    """With ``regroup_after: arrival`` (async mode's default) the agent that answered leases next from
    blocks formed around the new plan, while the block another agent holds keeps its robots and version:
    that agent's answer is still current. With ``stalled`` its next block is one of the first ones."""
    from tasks.registry import create_task

    params = {"map": "random-32-32-10", "robots": 60, "blocks": 3, "exact_limit": 0, "initial": "shortest"}
    params["neighbourhood_leases"] = (
        False  # (with them, every lease forms its block: test_neighbourhood_leases)
    )
    body: dict[str, Any] = {"kind": "routing", "params": params, "mode": "async"}
    if regroup_after == "stalled":
        body["regroup_after"] = "stalled"
    task = coordinator.create_task(**body, stop={"stall_rounds": 50})
    tid = task["id"]
    assert coordinator.admin.get(f"/v1/tasks/{tid}").json()["regroup_after"] == regroup_after
    a, b = (coordinator.join(task, name=n)[0] for n in ("a", "b"))
    local = create_task("routing", params)
    heuristic = local.make_proposer(local.ProposerParams(time_budget=1.0), seed=1)

    def robots(grant: dict[str, Any]) -> frozenset[int]:
        return frozenset(r["id"] for r in grant["contract"]["data"]["robots"])

    ga, gb = lease(a, tid), lease(b, tid)
    drafts = [heuristic.propose(g["contract"]) for g in (ga, gb)]  # both on version 0
    assert drafts[0] is not None and drafts[1] is not None
    first = submit(a, tid, ga, drafts[0].value, wait=10)
    assert first["verdict"]["code"] == "merged", first
    ga2 = lease(a, tid)
    partition = {robots(ga), robots(gb), frozenset(range(60)) - robots(ga) - robots(gb)}
    if regroup_after == "arrival":
        assert robots(ga2) not in partition and not robots(ga2) & robots(gb)
    else:
        assert robots(ga2) in partition
    late = submit(b, tid, gb, drafts[1].value, wait=10)  # made on version 0, b's block kept
    assert late["verdict"]["code"] in ("merged", "merged (repaired against the head)", "not_improving"), late


def test_regroup_after_arrival_is_refused_in_rounds_mode(coordinator: Coordinator) -> None:
    r = coordinator.admin.post(
        "/v1/tasks", json={"kind": "quadratic", "params": {"blocks": 4}, "regroup_after": "arrival"}
    )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["field"] == "regroup_after" and "needs mode 'async'" in error["message"]


def test_a_stall_in_seconds_keeps_quick_empty_rounds_from_ending_the_task(coordinator: Coordinator) -> None:
    """Held agents make rounds short, so "1 round without a merge" would end the run at once; with
    ``stall_seconds`` the empty rounds stop it only after that long without a merge."""
    started = time.monotonic()
    task = coordinator.create_task(
        params={"blocks": 2, "dim": 2}, stop={"stall_rounds": 1, "stall_seconds": 1.0}
    )
    _idle_rounds(coordinator, task, 400)
    tid = task["id"]
    stall = coordinator.wait_for(tid, lambda v: v["status"] != "running", timeout=20)
    assert stall["status"] == "stalled"
    assert stall["round"] > 1  # stall_rounds 1 alone stops it after the first empty round
    assert time.monotonic() - started >= 1.0
