"""The hot routes (``coordinator/api/hot.py``) answer as FastAPI does, and plain agent requests take them.

The same script of requests, plain and malformed, runs against two coordinators that differ only in
``create_app(hot_routes=...)``; every answer's status, error code and message (ids masked) must match.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from coordinator.api.embedded import EmbeddedServer
from coordinator.api.hot import HotRoutes
from coordinator.api.main import create_app
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore

ADMIN = "hot-routes-admin-token-0123456789"
LIMIT = 4096


def _server(hot: bool) -> tuple[EmbeddedServer, Any]:
    settings = ServiceSettings(
        admin_token=SecretStr(ADMIN), lease_ttl=5.0, round_deadline=0.5, max_body_bytes=LIMIT
    )
    app = create_app(settings, MemoryStore(), CollectorRegistry(), hot_routes=hot)
    server = EmbeddedServer(app)
    server.start()
    return server, app


def _masked(text: str, ids: list[str]) -> str:
    for k, value in enumerate(ids):
        text = text.replace(value, f"<id{k}>")
    return re.sub(r"[0-9a-f]{32}", "<hex>", text)


def _script(url: str) -> list[tuple[str, int, str]]:
    """(step, status, error code and message or the answer's keys) for each request of the script."""
    out: list[tuple[str, int, str]] = []
    ids: list[str] = []
    with httpx.Client(base_url=url, timeout=30.0) as c:
        admin = {"Authorization": f"Bearer {ADMIN}"}
        task = c.post(
            "/v1/tasks", json={"kind": "quadratic", "params": {"blocks": 4, "dim": 2}}, headers=admin
        ).json()
        tid = task["id"]
        joined = c.post(
            f"/v1/tasks/{tid}/agents",
            json={"name": "a"},
            headers={"Authorization": f"Bearer {task['join_token']}"},
        ).json()
        ids += [tid, joined["agent_id"]]
        me = {"Authorization": f"Bearer {joined['token']}"}
        base = f"/v1/tasks/{tid}"

        def record(step: str, r: httpx.Response) -> dict[str, Any]:
            body = r.json() if r.content else {}
            if isinstance(body, dict) and "error" in body:
                shown = f"{body['error']['code']}: {_masked(body['error']['message'], ids)}"
            else:
                shown = ",".join(sorted(body)) if isinstance(body, dict) else type(body).__name__
                shown += " with a next lease" if isinstance(body, dict) and body.get("next_lease") else ""
            out.append((step, r.status_code, shown))
            return body if isinstance(body, dict) else {}

        grant = record("lease", c.post(f"{base}/leases", headers=me))
        ids.append(grant["lease_id"])
        proposal = {
            "lease_id": grant["lease_id"],
            "block": grant["block"],
            "base_version": grant["version"],
            "value": [0.0, 0.0],
            "predicted_improvement": 0.0,
        }
        record("lease without token", c.post(f"{base}/leases"))
        record("lease, unknown task", c.post("/v1/tasks/nope/leases", headers=me))
        for step, query, body, headers in [
            ("not JSON", "", b"{not json", {"Content-Type": "application/json"}),
            ("empty body", "", b"", {"Content-Type": "application/json"}),
            ("text/plain", "", b'{"block": 0}', {"Content-Type": "text/plain"}),
            ("over the limit", "", b"[" + b"0," * LIMIT + b"0]", {"Content-Type": "application/json"}),
        ]:
            record(step, c.post(f"{base}/proposals{query}", content=body, headers={**me, **headers}))
        for step, query, changed in [
            ("block as a string", "", {"block": str(grant["block"])}),
            ("unknown field", "", {"extra": 1}),
            ("negative wait", "?wait=-1", {}),
            ("wait not a number", "?wait=abc", {}),
            ("next_lease not a boolean", "?next_lease=maybe", {}),
            ("encoded query", "?wa%69t=-1", {}),
            ("bad token", "", {"id": "p-bad-token"}),
            ("unknown task", "", {"id": "p-unknown-task"}),
            ("wrong block", "", {"block": (grant["block"] + 1) % 4}),
            ("plain submit", "?wait=0", {"id": "p-plain"}),
            ("again, idempotent", "?wait=5&next_lease=false", {"id": "p-plain"}),
        ]:
            headers = {"Authorization": "Bearer wrong"} if step == "bad token" else me
            path = "/v1/tasks/nope/proposals" if step == "unknown task" else f"{base}/proposals"
            record(step, c.post(path + query, json={**proposal, **changed}, headers=headers))
        record("poll", c.get(f"{base}/proposals/p-plain?wait=5", headers=me))
        record("poll, unknown proposal", c.get(f"{base}/proposals/p-nope", headers=me))
        record("poll, bad wait", c.get(f"{base}/proposals/p-plain?wait=x", headers=me))
        record(
            "verdict with the next lease", c.get(f"{base}/proposals/p-plain?wait=5&next_lease=1", headers=me)
        )
        record("trailing slash", c.post(f"{base}/proposals/", json=proposal, headers=me))
        routing = c.post(
            "/v1/tasks",
            json={"kind": "routing", "params": {"map": "empty-8-8", "robots": 4, "blocks": 2}},
            headers=admin,
        ).json()
        ids.append(routing["id"])
        mine = c.post(
            f"/v1/tasks/{routing['id']}/agents",
            json={"name": "b"},
            headers={"Authorization": f"Bearer {routing['join_token']}"},
        ).json()
        feed = {"Authorization": f"Bearer {mine['token']}"}
        head = c.post(f"/v1/tasks/{routing['id']}/leases", headers=feed).json()["version"]
        for step, path, query, headers in [
            ("changes", routing["id"], f"?since={head}", feed),
            ("changes, a version not reached", routing["id"], f"?since={head + 5}", feed),
            ("changes, no since", routing["id"], "", feed),
            ("changes, since twice", routing["id"], f"?since={head + 5}&since={head}", feed),
            ("changes, negative since", routing["id"], "?since=-1", feed),
            ("changes, since not a number", routing["id"], "?since=x", feed),
            ("changes, encoded query", routing["id"], "?s%69nce=0", feed),
            ("changes without token", routing["id"], "?since=0", {}),
            ("changes, another task's token", tid, "?since=0", feed),
            ("changes, a kind without them", tid, "?since=0", me),
            ("changes, unknown task", "nope", "?since=0", feed),
        ]:
            r = c.get(f"/v1/tasks/{path}/changes{query}", headers=headers)
            record(step, r)
            if step == "changes":
                out.append(("changes, bytes", r.status_code, r.text))
        record("method not allowed", c.put(f"{base}/proposals", json=proposal, headers=me))
    return out


@pytest.fixture
def servers() -> Iterator[tuple[tuple[EmbeddedServer, Any], tuple[EmbeddedServer, Any]]]:
    hot, plain = _server(True), _server(False)
    yield hot, plain
    hot[0].stop()
    plain[0].stop()


def test_hot_routes_answer_as_fastapi_does(
    servers: tuple[tuple[EmbeddedServer, Any], tuple[EmbeddedServer, Any]],
) -> None:
    (hot_server, hot_app), (plain_server, plain_app) = servers
    hot, plain = _script(hot_server.url), _script(plain_server.url)
    assert [s for s, _, _ in hot] == [s for s, _, _ in plain]
    for got, want in zip(hot, plain, strict=True):
        assert got == want
    statuses = {step: status for step, status, _ in hot}
    assert statuses["plain submit"] == 202 and statuses["over the limit"] == 413
    assert statuses["bad token"] == 401 and statuses["negative wait"] == 422
    assert statuses["changes"] == 200 and statuses["changes, a version not reached"] == 404
    assert statuses["changes, negative since"] == statuses["changes, no since"] == 422
    shown = {step: text for step, _, text in hot}
    assert statuses["verdict with the next lease"] == 200
    assert shown["verdict with the next lease"].endswith("a next lease")
    # the plain agent requests were answered by the hot routes, the malformed ones by FastAPI
    assert isinstance(hot_app.middleware_stack, HotRoutes) and hot_app.middleware_stack.served >= 15
    assert not isinstance(plain_app.middleware_stack, HotRoutes)
