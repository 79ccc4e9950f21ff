"""The /v1 routes the web UI reads (agents, a kind's view and its module), SSE resumption with
Last-Event-ID, and what runs print about the page."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from agents.worker import Worker, WorkerConfig
from coordinator.ui.hint import live_view_hint
from tests.conftest import Coordinator


def solve(coord: Coordinator, task: dict[str, Any], agents: int = 2) -> dict[str, Any]:
    """Real workers in threads, over HTTP, until the task ends."""
    stop = threading.Event()
    workers = [
        Worker(
            WorkerConfig(
                coordinator=coord.url, task=task["id"], join_token=task["join_token"], name=f"w{i}", seed=i
            ),
            stop,
        )
        for i in range(agents)
    ]
    threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
    for t in threads:
        t.start()
    try:
        return coord.wait_for(task["id"], lambda v: v["status"] != "running", timeout=120)
    finally:
        stop.set()
        for t in threads:
            t.join(30)


def events(
    coord: Coordinator, task_id: str, headers: dict[str, str] | None = None, since: int = 0
) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    with httpx.stream(
        "GET",
        f"{coord.url}/v1/tasks/{task_id}/events?since={since}",
        headers={"Authorization": coord.admin.headers["Authorization"], **(headers or {})},
        timeout=60,
    ) as r:
        kind = ""
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                out.append((kind, json.loads(line[6:])))
    return out


def test_agents_route_lists_every_agent_with_verdicts_and_usage(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 4, "dim": 3})
    solve(coordinator, task, agents=3)
    r = coordinator.admin.get(f"/v1/tasks/{task['id']}/agents")
    assert r.status_code == 200, r.text
    body = r.json()
    assert sorted(a["name"] for a in body["agents"]) == ["w0", "w1", "w2"]
    trajectories = [
        json.loads(line)
        for line in coordinator.admin.get(f"/v1/tasks/{task['id']}/trajectories").text.splitlines()
    ]
    proposals = [t for t in trajectories if t["type"] == "proposal"]
    assert sum(a["proposals"] for a in body["agents"]) == len(proposals) > 0
    assert sum(a["accepted"] for a in body["agents"]) == sum(p["verdict"] == "accepted" for p in proposals)
    assert sum(a["calls"] for a in body["agents"]) > 0
    for a in body["agents"]:
        assert a["leases"] == []  # the task has ended: nothing is held
        if a["proposals"]:
            assert a["last_verdict"] is not None
    rejected = [p for p in proposals if p["verdict"] == "rejected"]
    assert sum(sum(c.values()) for c in body["rejected_by_round"].values()) == len(rejected)


def test_agents_route_shows_a_held_lease_and_its_age(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 2, "dim": 2})
    agent, joined = coordinator.join(task, "holder")
    lease = agent.post(f"/v1/tasks/{task['id']}/leases").json()
    body = coordinator.admin.get(f"/v1/tasks/{task['id']}/agents").json()
    (me,) = body["agents"]
    assert me["id"] == joined["agent_id"]
    assert [h["block"] for h in me["leases"]] == [lease["block"]]
    assert me["leases"][0]["age"] >= 0


@pytest.mark.parametrize("header", [None, "Bearer wrong-token", "Basic abc"])
def test_ui_read_routes_refuse_a_missing_or_wrong_token(coordinator: Coordinator, header: str | None) -> None:
    task = coordinator.create_task()
    headers = {"Authorization": header} if header else {}
    for path in ("agents", "view"):
        r = httpx.get(f"{coordinator.url}/v1/tasks/{task['id']}/{path}", headers=headers)
        assert r.status_code == 401, r.text
        assert r.json()["error"]["code"] == "unauthorized"
        assert "wrong-token" not in r.text


def test_view_route_serves_the_kinds_model_and_renderer(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 5, "dim": 2})
    view = coordinator.admin.get(f"/v1/tasks/{task['id']}/view").json()
    assert view["kind"] == "quadratic" and view["version"] == 0
    assert len(view["model"]["residuals"]) == 5 and all(r >= 0 for r in view["model"]["residuals"])
    module = httpx.get(coordinator.url + view["renderer"])
    assert module.status_code == 200
    assert module.headers["content-type"].startswith("text/javascript")
    assert "export function mount" in module.text
    solve(coordinator, task)
    after = coordinator.admin.get(f"/v1/tasks/{task['id']}/view").json()
    assert after["version"] > 0
    assert max(after["model"]["residuals"]) < min(view["model"]["residuals"])  # solved: residuals near zero


def test_routing_view_has_one_path_per_robot(coordinator: Coordinator) -> None:
    task = coordinator.create_task(
        kind="routing", params={"map": "random-32-32-10", "robots": 12, "exact_limit": 0}
    )
    view = coordinator.admin.get(f"/v1/tasks/{task['id']}/view").json()
    m = view["model"]
    assert len(m["paths"]) == 12 and m["width"] == 32 and len(m["rows"]) == m["height"]
    assert all(m["rows"][c // m["width"]][c % m["width"]] == "." for p in m["paths"] for c in p)


def test_unknown_kind_module_is_404(coordinator: Coordinator) -> None:
    r = httpx.get(f"{coordinator.url}/v1/kinds/no-such-kind/view.js")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_events_resume_after_last_event_id(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 4, "dim": 3, "coupling": 0.6})
    solve(coordinator, task)
    full = [d["round"] for k, d in events(coordinator, task["id"]) if k == "round"]
    assert len(full) >= 3
    resumed = events(coordinator, task["id"], {"Last-Event-ID": str(full[1])})
    assert [d["round"] for k, d in resumed if k == "round"] == full[2:]
    assert resumed[-1][0] == "status"
    garbage = events(coordinator, task["id"], {"Last-Event-ID": "not-a-number"})
    assert [d["round"] for k, d in garbage if k == "round"] == full  # ignored, not an error


def test_ui_page_and_docs_are_served(coordinator: Coordinator) -> None:
    page = httpx.get(f"{coordinator.url}/ui/")
    assert page.status_code == 200 and '<script type="module" src="./app.js">' in page.text
    assert httpx.get(f"{coordinator.url}/ui", follow_redirects=False).status_code == 308
    for path in ("/docs", "/redoc"):
        html = httpx.get(coordinator.url + path).text
        assert "cdn" not in html.lower() and "/static-offline-docs/" in html
    assert httpx.get(f"{coordinator.url}/static-offline-docs/swagger-ui-bundle.js").status_code == 200


def test_live_view_hint_never_echoes_the_users_own_token() -> None:
    mine = live_view_hint("http://127.0.0.1:1", "t-1", None, keep_open=False)
    assert "/ui/#/tasks/t-1" in mine and "BLOCKOPT_ADMIN_TOKEN" in mine and "--ui" in mine
    made = live_view_hint("http://127.0.0.1:1", "t-1", "tok123", keep_open=True)
    assert "tok123" in made and "Ctrl-C" in made
    assert "tok123" not in made.split()[2]  # the URL itself carries no token
