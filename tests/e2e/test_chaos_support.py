"""The loss counter of the chaos suite can fail: an acknowledged id missing from the books is a loss, and a
stored proposal without a verdict is unjudged."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.chaos_support import count_losses
from tests.conftest import Coordinator


def test_a_missing_acknowledged_proposal_is_counted_as_lost(
    coordinator_factory: Callable[..., Coordinator],
) -> None:
    coordinator = coordinator_factory(round_deadline=120.0)  # the round waits for the other block's agent
    task = coordinator.create_task(params={"blocks": 2, "dim": 2})
    agent, _ = coordinator.join(task)
    other, _ = coordinator.join(task, name="other")
    assert other.post(f"/v1/tasks/{task['id']}/leases").status_code == 201
    lease = agent.post(f"/v1/tasks/{task['id']}/leases").json()
    pid = "a" * 32
    r = agent.post(
        f"/v1/tasks/{task['id']}/proposals",
        params={"wait": 0},
        json={
            "id": pid,
            "lease_id": lease["lease_id"],
            "block": lease["block"],
            "base_version": lease["version"],
            "value": [0.0, 0.0],
            "predicted_improvement": 0.0,
        },
    )
    assert r.status_code == 202, r.text
    counted = count_losses("check", coordinator.url, task["id"], {pid, "b" * 32}, time.monotonic())
    assert (counted.acknowledged, counted.stored, counted.lost) == (2, 1, 1)
    assert counted.unjudged == 1  # stored, no verdict yet
