"""Private reads, the metrics token, 405 with Allow, and the machine-usable OpenAPI, on a real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from tasks.registry import kinds
from tests.conftest import ADMIN, Coordinator

READ_ROUTES = ["", "/rounds", "/report", "/solution", "/events", "/trajectories"]
"""Every task read route, as a suffix of /v1/tasks/{id} (events: read once the task has ended)."""


@pytest.fixture
def ended(coordinator: Coordinator) -> tuple[Coordinator, dict[str, Any], str]:
    """A stopped task (so its event stream ends) and one of its agent tokens."""
    task = coordinator.create_task()
    _, joined = coordinator.join(task)
    assert coordinator.admin.post(f"/v1/tasks/{task['id']}/stop").status_code == 200
    return coordinator, task, joined["token"]


def read(coord: Coordinator, task_id: str, suffix: str, token: str | None) -> httpx.Response:
    return coord.client(token).get(f"/v1/tasks/{task_id}{suffix}")


@pytest.mark.parametrize("suffix", READ_ROUTES)
def test_each_read_route_accepts_admin_read_and_agent_tokens(
    ended: tuple[Coordinator, dict[str, Any], str], suffix: str
) -> None:
    coord, task, agent_token = ended
    for token in (ADMIN, task["read_token"], agent_token):
        r = read(coord, task["id"], suffix, token)
        assert r.status_code == 200, (suffix, r.text)


@pytest.mark.parametrize("suffix", READ_ROUTES)
def test_each_read_route_refuses_no_token_and_other_tokens(
    ended: tuple[Coordinator, dict[str, Any], str], suffix: str
) -> None:
    coord, task, _ = ended
    other = coord.create_task()
    _, other_agent = coord.join(other)
    for token in (None, "not-a-token", task["join_token"], other["read_token"], other_agent["token"]):
        r = read(coord, task["id"], suffix, token)
        assert r.status_code == 401, (suffix, token, r.text)
        assert r.json()["error"]["code"] == "unauthorized"
        assert task["id"] not in r.text.replace(f"/v1/tasks/{task['id']}", "")  # says nothing about the task


def test_listing_tasks_needs_the_admin_token(ended: tuple[Coordinator, dict[str, Any], str]) -> None:
    coord, task, agent_token = ended
    assert coord.admin.get("/v1/tasks").status_code == 200
    assert coord.client().get("/v1/tasks").status_code == 401
    for token in (task["read_token"], agent_token):
        r = coord.client(token).get("/v1/tasks")
        assert r.status_code == 401 and "admin token" in r.json()["error"]["message"]


def test_public_read_opens_every_read_but_not_administration(
    coordinator_factory: Callable[..., Coordinator],
) -> None:
    coord = coordinator_factory(public_read=True, round_deadline=0.5)
    task = coord.create_task()
    assert coord.admin.post(f"/v1/tasks/{task['id']}/stop").status_code == 200
    for suffix in READ_ROUTES:
        assert read(coord, task["id"], suffix, None).status_code == 200, suffix
    assert coord.client().get("/v1/tasks").status_code == 200
    assert coord.client().post(f"/v1/tasks/{task['id']}/stop").status_code == 401


def test_probes_stay_open_and_metrics_is_open_without_a_metrics_token(coordinator: Coordinator) -> None:
    anonymous = coordinator.client()
    for path in ("/healthz", "/readyz", "/metrics"):
        assert anonymous.get(path).status_code == 200, path


def test_metrics_token_closes_metrics_only(coordinator_factory: Callable[..., Coordinator]) -> None:
    token = "metrics-token-b7f3c1d9e2a4"
    coord = coordinator_factory(metrics_token=SecretStr(token))
    r = coord.client().get("/metrics")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    assert coord.client("wrong-metrics-token").get("/metrics").status_code == 401
    assert coord.client(ADMIN).get("/metrics").status_code == 401  # its own token, not the admin one
    ok = coord.client(token).get("/metrics")
    assert ok.status_code == 200 and "blockopt_" in ok.text
    assert (
        coord.client().get("/healthz").status_code == 200 and coord.client().get("/readyz").status_code == 200
    )


def test_unknown_task_is_404_for_a_token_holder_but_401_without_a_token(coordinator: Coordinator) -> None:
    assert coordinator.admin.get("/v1/tasks/t-nope").status_code == 404
    assert coordinator.client().get("/v1/tasks/t-nope").status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/tasks", {"GET", "POST"}),
        ("DELETE", "/v1/tasks/t-x", {"GET"}),
        ("GET", "/v1/tasks/t-x/leases", {"POST"}),
        ("PATCH", "/v1/tasks/t-x/leases/l-1", {"DELETE"}),
        ("POST", "/healthz", {"GET"}),
    ],
)
def test_405_carries_allow(coordinator: Coordinator, method: str, path: str, allowed: set[str]) -> None:
    r = coordinator.admin.request(method, path)
    assert r.status_code == 405, r.text
    assert r.json()["error"]["code"] == "method_not_allowed"
    got = {m.strip() for m in r.headers["allow"].split(",")} - {"HEAD"}
    assert got == allowed


def openapi_of(coord: Coordinator) -> dict[str, Any]:
    r = coord.client().get("/openapi.json")
    assert r.status_code == 200
    return dict(r.json())


def test_openapi_kind_is_a_discriminated_union_of_every_installed_kind(coordinator: Coordinator) -> None:
    schemas = openapi_of(coordinator)["components"]["schemas"]
    create = schemas["CreateTask"]
    assert create["discriminator"]["propertyName"] == "kind"
    assert set(create["discriminator"]["mapping"]) == set(kinds())
    for kind, cls in kinds().items():
        variant = schemas[create["discriminator"]["mapping"][kind].rsplit("/", 1)[-1]]
        assert variant["properties"]["kind"]["const"] == kind
        params = schemas[variant["properties"]["params"]["$ref"].rsplit("/", 1)[-1]]
        assert set(params["properties"]) == set(cls.Params.model_fields)
        example = variant["examples"][0]
        assert example["kind"] == kind
        cls.Params.model_validate(example["params"])  # the documented example is valid params


def test_openapi_union_lists_only_served_kinds(coordinator_factory: Callable[..., Coordinator]) -> None:
    one = sorted(kinds())[0]
    coord = coordinator_factory(kinds=(one,))
    create = openapi_of(coord)["components"]["schemas"]["CreateTask"]
    assert set(create["discriminator"]["mapping"]) == {one}
    other = next(k for k in sorted(kinds()) if k != one)
    r = coord.admin.post("/v1/tasks", json={"kind": other, "params": {}})
    assert r.status_code == 400 and f"not '{other}'" in r.json()["error"]["message"]


def test_openapi_links_chain_create_join_lease_submit_poll(coordinator: Coordinator) -> None:
    spec = openapi_of(coordinator)
    ops = {
        op["operationId"]: (path, method)
        for path, item in spec["paths"].items()
        for method, op in item.items()
    }

    def link(path: str, method: str, status: str, name: str) -> tuple[tuple[str, str], dict[str, Any]]:
        found = spec["paths"][path][method]["responses"][status]["links"][name]
        return ops[found["operationId"]], found

    assert link("/v1/tasks", "post", "201", "Join")[0] == ("/v1/tasks/{task_id}/agents", "post")
    assert link("/v1/tasks/{task_id}/agents", "post", "201", "Lease")[0] == (
        "/v1/tasks/{task_id}/leases",
        "post",
    )
    target, submit = link("/v1/tasks/{task_id}/leases", "post", "201", "Submit")
    assert target == ("/v1/tasks/{task_id}/proposals", "post")
    assert submit["requestBody"]["lease_id"] == "$response.body#/lease_id"
    target, poll = link("/v1/tasks/{task_id}/proposals", "post", "202", "Poll")
    assert target == ("/v1/tasks/{task_id}/proposals/{proposal_id}", "get")
    assert poll["parameters"]["proposal_id"] == "$response.body#/id"


def test_every_route_declares_its_errors_with_the_error_body(coordinator: Coordinator) -> None:
    spec = openapi_of(coordinator)
    for path, item in spec["paths"].items():
        for method, op in item.items():
            errors = {s: r for s, r in op["responses"].items() if s.startswith(("4", "5"))}
            assert {"401", "404", "405", "422"} <= set(errors), (path, method)
            for response in errors.values():
                ref = response["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), (path, method)
