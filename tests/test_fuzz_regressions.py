"""Failures the schemathesis run (tests/test_fuzz_api.py) once found, kept as regression tests."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from coordinator.engine.adaptive import Bandit, SelectionSettings
from tests.conftest import Coordinator

SOUND = {"kind": "quadratic", "params": {"blocks": 2, "dim": 2}}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        (("stop", "relative_gap"), False),  # found: `false` was read as 0.0
        (("budgets", "agent_calls"), False),  # found: `false` was read as 0
        (("budgets", "rounds"), "5"),
        (("window",), True),
        (("params", "blocks"), True),  # the kind's own params are strict too
        (("params", "coupling"), "0.3"),
        (("stop_when", "gain_per_1k_tokens"), "0.5"),  # found (seed 1): a string was read as a number
    ],
)
def test_task_bodies_are_not_coerced(coordinator: Coordinator, field: tuple[str, ...], value: Any) -> None:
    body: dict[str, Any] = {**SOUND, "params": dict(SOUND["params"]), "stop": {}, "budgets": {}}
    target = body
    for name in field[:-1]:
        target = target.setdefault(name, {})
    target[field[-1]] = value
    r = coordinator.admin.post("/v1/tasks", json=body)
    assert r.status_code in (400, 422), r.text
    assert field[-1] in r.json()["error"]["message"]


def test_agent_bodies_are_not_coerced(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 2, "dim": 2})
    agent, _ = coordinator.join(task)
    grant = agent.post(f"/v1/tasks/{task['id']}/leases").json()
    body = {
        "lease_id": grant["lease_id"],
        "block": grant["block"],
        "base_version": grant["version"],
        "value": [0.0, 0.0],
        "predicted_improvement": 0.0,
        "usage": {"calls": False},
    }
    r = agent.post(f"/v1/tasks/{task['id']}/proposals", json=body)
    assert r.status_code == 422 and "calls" in r.json()["error"]["message"]
    r = agent.post(f"/v1/tasks/{task['id']}/proposals", json={**body, "usage": {"calls": 1}, "block": "0"})
    assert r.status_code == 422 and "block" in r.json()["error"]["message"]
    ok = agent.post(f"/v1/tasks/{task['id']}/proposals", json={**body, "usage": {"calls": 1}})
    assert ok.status_code in (200, 202), ok.text


# -- the schema says what the server accepts (issue 33) ------------------------------------------------
# Each case is a body the schema and the server once disagreed on: schemathesis' positive_data_acceptance and
# negative_data_rejection checks found them. Each case asserts that the served document allows the body
# exactly when the server accepts it; ``allowed`` says which way the two now agree, ``named`` what a refusal
# names.


def schema_allows(spec: dict[str, Any], component: str, body: Any) -> bool:
    """Whether ``body`` is valid against ``component`` of the served OpenAPI document (JSON Schema)."""
    root = {"$ref": f"#/components/schemas/{component}", "components": spec["components"]}
    return bool(jsonschema_rs.Draft202012Validator(root).is_valid(body))


def _patched(body: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(body)
    for name, value in patch.items():
        out[name] = {**out.get(name, {}), **value} if isinstance(value, dict) and name != "params" else value
    return out


@pytest.mark.parametrize(
    ("patch", "allowed", "named"),
    [
        (
            {"selection": {"generators": []}},
            False,
            "generators",
        ),  # found: the schema allowed [], the server said 400
        (
            {"selection": {"generators": ["no-such-generator"]}},
            False,
            "no-such-generator",
        ),  # the kind's variant lists its own
        ({"selection": {"generators": ["partition"]}}, True, None),
        (
            {"selection": {"size": 0.05, "min_size": 0.1}},
            True,
            None,
        ),  # found: 422 for min_size <= size <= max_size
        ({"selection": {"min_size": 0.9, "max_size": 0.2, "policy": "ucb1"}}, True, None),
        (
            {"selection": {"hold": True}},
            False,
            "hold",
        ),  # hold needs a learning policy: the schema's if/then says so
        ({"selection": {"hold": True, "policy": "alns"}}, True, None),
        ({"selection": {"every_round": 1}}, False, "every_round"),  # selection was lax: 1 was read as true
        ({"regroup_after": "arrival"}, False, "arrival"),  # arrival needs mode async (if/then)
        ({"regroup_after": "arrival", "mode": "async"}, True, None),
        ({"stop_when": {"horizon_rounds": 5}}, False, "gain_per"),  # a threshold is needed (anyOf)
        ({"stop_when": {"gain_per_agent_second": 0.1}}, True, None),
        (
            {"proposer": {"knobs": {"no_such_knob": 1}}},
            False,
            "no_such_knob",
        ),  # knobs are the kind's ProposerParams
        (
            {"proposer": {"knobs": {"staleness": True}}},
            False,
            "staleness",
        ),  # knobs were lax: true was read as 1
        ({"proposer": {"knobs": {"staleness": 1.0}}}, True, None),  # 1.0 is an integer in JSON Schema
        ({"window": 4.0}, True, None),  # found: strict validation refused the integer 4.0
        ({"budgets": {"rounds": 50.0}}, True, None),
        ({"stop": {"stall_rounds": 5.0}}, True, None),
        ({"params": {"blocks": 2.0, "dim": 2, "seed": 7.0}}, True, None),  # found: the kind's params likewise
        ({"params": {"blocks": 2.5, "dim": 2}}, False, "blocks"),
    ],
)
def test_the_schema_allows_a_task_body_exactly_when_the_server_accepts_it(
    coordinator: Coordinator, patch: dict[str, Any], allowed: bool, named: str | None
) -> None:
    spec = coordinator.admin.get("/openapi.json").json()
    body = _patched({**SOUND, "budgets": {"seconds": 5.0}}, patch)
    assert schema_allows(spec, "CreateTask", body) is allowed
    r = coordinator.admin.post("/v1/tasks", json=body)
    if allowed:
        assert r.status_code == 201, r.text
        coordinator.admin.post(f"/v1/tasks/{r.json()['id']}/stop")
    else:
        assert r.status_code in (400, 422), r.text
        assert named is not None and named in r.json()["error"]["message"], r.text


def test_sizes_the_schema_allows_are_clamped_into_their_range(coordinator: Coordinator) -> None:
    """min_size <= size <= max_size cannot be said in JSON Schema, so every allowed triple means something:
    the size starts clamped into [min_size, max_size], and where the two cross, max_size wins."""
    settings = SelectionSettings(policy="ucb1", size=0.05, min_size=0.1)
    assert Bandit(["partition", "regroup"], settings).gens["regroup"].size == 0.1
    crossed = SelectionSettings(policy="ucb1", size=0.5, min_size=0.9, max_size=0.2)
    assert Bandit(["partition"], crossed).gens["partition"].size == 0.2


def test_integral_floats_fill_integer_fields_of_agent_bodies(coordinator: Coordinator) -> None:
    """found: block 0.0, base_version 3.0, usage.calls 1.0 are integers to the schema, 422 to the server."""
    task = coordinator.create_task(params={"blocks": 2, "dim": 2})
    agent, _ = coordinator.join(task)
    grant = agent.post(f"/v1/tasks/{task['id']}/leases").json()
    body = {
        "lease_id": grant["lease_id"],
        "block": float(grant["block"]),
        "base_version": float(grant["version"]),
        "value": grant["contract"]["data"]["x"],
        "predicted_improvement": 0.0,
        "usage": {"calls": 1.0, "prompt_tokens": 0.0},
    }
    ok = agent.post(f"/v1/tasks/{task['id']}/proposals", json=body)
    assert ok.status_code in (200, 202), ok.text
    half = agent.post(f"/v1/tasks/{task['id']}/proposals", json={**body, "block": 0.5})
    assert half.status_code == 422 and "block" in half.json()["error"]["message"]
    grant = agent.post(f"/v1/tasks/{task['id']}/leases").json()
    abandon = {
        "block": float(grant["block"]),
        "base_version": float(grant["version"]),
        "usage": {"calls": 2.0},
    }
    r = agent.post(f"/v1/tasks/{task['id']}/leases/{grant['lease_id']}/abandon", json=abandon)
    assert r.status_code in (200, 201), r.text
