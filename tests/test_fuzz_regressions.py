"""Failures the schemathesis run (tests/test_fuzz_api.py) once found, kept as regression tests."""

from __future__ import annotations

from typing import Any

import pytest

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
