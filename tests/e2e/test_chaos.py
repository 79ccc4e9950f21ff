"""Chaos with counted losses: faults under load, then every acknowledged proposal is looked up in the books.

Each scenario runs real ``blockopt serve`` processes and real ``blockopt fleet``
processes (debug logs: every acknowledgement on disk), injects one fault, lets
the agents carry on, then stops them, lets the coordinator judge what is queued
and stops the task. It asserts the task is in a terminal state and counts:
acknowledged proposals, proposals with a recorded verdict, and the two
differences that must be 0 (acknowledged but missing from the books; in the
books without a verdict). ``BLOCKOPT_CHAOS_RESULTS=file`` collects the counts.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.chaos_support import Agents, admin, count_losses, drain_and_stop, rounds
from tests.coordinator.store.test_redis_replicas import Cluster
from tests.redis_support import (
    PrivateRedis,
    Replica,
    create_task,
    new_prefix,
    purge,
    require_redis,
    wait_until,
)

pytestmark = pytest.mark.slow

ENDLESS = {
    "kind": "quadratic",
    "params": {"blocks": 12, "dim": 3, "coupling": 0.5},
    "merge_policy": "checked",
    "stop": {"relative_gap": 0.0, "stall_rounds": 1_000_000},
    "budgets": {"rounds": 1_000_000},
}
"""Never stops by itself: every fault lands mid-run, and the test ends it."""


def _busy_pair(c: Cluster, agents: Agents) -> tuple[Replica, Replica, dict[str, Any], float]:
    """Two replicas sharing a 24-block task, 6 agents on each: rounds keep coming while a fault lands."""
    a, b = c.start_replicas("a", "b")
    task = create_task(a, **{**ENDLESS, "params": {"blocks": 24, "dim": 4, "coupling": 0.5}})
    started = time.monotonic()
    agents.start(a.url, task, 6, seed=1)
    agents.start(b.url, task, 6, seed=2)
    return a, b, task, started


def _acks_grow(agents: Agents, before: int, more: int = 3) -> None:
    wait_until(lambda: len(agents.acknowledged()) >= before + more, 90, "agents to resume after the fault")


def _assert_nothing_lost(
    scenario: str, url: str, task_id: str, agents: Agents, started: float, final: dict[str, Any]
) -> None:
    losses = count_losses(scenario, url, task_id, agents.acknowledged(), started)
    assert final["status"] == "stopped", final
    assert losses.acknowledged > 0
    assert losses.lost == 0, losses
    assert losses.unjudged == 0, losses


@pytest.fixture
def private_redis(tmp_path: Path) -> Any:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.kill()


def test_redis_restart_with_aof(tmp_path: Path, private_redis: PrivateRedis) -> None:
    c = Cluster(private_redis.url, new_prefix(), tmp_path)
    agents = Agents(tmp_path)
    try:
        a, b = c.start_replicas("a", "b")
        task = create_task(a, **ENDLESS)
        started = time.monotonic()
        agents.start(a.url, task, 3, seed=1)
        agents.start(b.url, task, 3, seed=2)
        wait_until(lambda: rounds(a.url, task["id"]) >= 2, 60, "two rounds before the restart")
        acked = len(agents.acknowledged())
        private_redis.kill()
        private_redis.start()  # same dir: the AOF (fsync always) brings every acknowledged write back
        _acks_grow(agents, acked)
        final = drain_and_stop(b.url, task["id"], agents)
        _assert_nothing_lost("Redis SIGKILL + restart (AOF)", b.url, task["id"], agents, started, final)
    finally:
        agents.stop()
        c.close()


def test_sigkill_of_the_replica_holding_the_round(tmp_path: Path) -> None:
    url = require_redis()
    c = Cluster(url, new_prefix(), tmp_path)
    agents = Agents(tmp_path)
    try:
        a, b, task, started = _busy_pair(c, agents)
        holder, fence = c.lock_holder(task["id"])
        survivor = b if holder is a else a
        holder.signal(signal.SIGKILL)
        holder.proc.wait(10)  # type: ignore[union-attr]
        wait_until(lambda: c.books(task["id"])["committed_fence"] > fence, 60, "the survivor to commit")
        agents.start(survivor.url, task, 6, seed=3)  # the dead replica's agents have nobody to talk to
        _acks_grow(agents, len(agents.acknowledged()))
        final = drain_and_stop(survivor.url, task["id"], agents)
        _assert_nothing_lost(
            "SIGKILL of the round-lock holder", survivor.url, task["id"], agents, started, final
        )
    finally:
        agents.stop()
        c.close()
        assert purge(url, c.prefix) == []


def test_replica_paused_past_its_lock(tmp_path: Path) -> None:
    url = require_redis()
    c = Cluster(url, new_prefix(), tmp_path)
    agents = Agents(tmp_path)
    try:
        a, b, task, started = _busy_pair(c, agents)
        holder, fence = c.lock_holder(task["id"])
        other = b if holder is a else a
        wait_until(
            lambda: c.books(task["id"])["committed_fence"] > fence,
            60,
            "the other replica to take the lapsed lock and commit",
        )
        holder.signal(signal.SIGCONT)
        holder.wait_ready(30)
        _acks_grow(agents, len(agents.acknowledged()))
        final = drain_and_stop(other.url, task["id"], agents)
        _assert_nothing_lost(
            "replica SIGSTOPped past its round lock", other.url, task["id"], agents, started, final
        )
    finally:
        agents.stop()
        c.close()
        assert purge(url, c.prefix) == []


def test_redis_unreachable_for_10_seconds(tmp_path: Path, private_redis: PrivateRedis) -> None:
    """Agents get 503 ``store_unavailable`` with a reason while Redis is gone, back off, and resume."""
    c = Cluster(private_redis.url, new_prefix(), tmp_path)
    agents = Agents(tmp_path)
    try:
        (a,) = c.start_replicas("a")
        task = create_task(a, **ENDLESS)
        started = time.monotonic()
        agents.start(a.url, task, 4, seed=1)
        wait_until(lambda: rounds(a.url, task["id"]) >= 2, 60, "two rounds before the outage")
        private_redis.kill()
        down_at = time.monotonic()
        seen: list[dict[str, Any]] = []

        def probe() -> bool:
            with admin(a.url) as client:
                r = client.get(f"/v1/tasks/{task['id']}")
            if r.status_code == 503:
                seen.append({"retry_after": r.headers.get("retry-after"), **r.json()["error"]})
            return bool(seen)

        wait_until(probe, 10, "a 503 from the coordinator while Redis is unreachable", every=0.5)
        time.sleep(max(0.0, 10 - (time.monotonic() - down_at)))
        acked = len(agents.acknowledged())
        private_redis.start()
        assert seen[0]["code"] == "store_unavailable" and "redis" in seen[0]["message"], seen[0]
        assert seen[0]["retry_after"] is not None
        _acks_grow(agents, acked)
        assert agents.alive(), "the agents gave up during the outage"
        final = drain_and_stop(a.url, task["id"], agents)
        _assert_nothing_lost("Redis unreachable 10 s", a.url, task["id"], agents, started, final)
    finally:
        agents.stop()
        c.close()


def test_agent_sigkill_storm(tmp_path: Path) -> None:
    """An agent process SIGKILLed every second for 12 s and replaced: their leases lapse, nothing is lost."""
    store = f"sqlite://{tmp_path / 'state.db'}"
    node = Replica("node", store, "unused:", tmp_path / "node.log").start()
    agents = Agents(tmp_path)
    rng = random.Random(7)
    try:
        task = create_task(node, **ENDLESS)
        started = time.monotonic()
        for seed in range(4):
            agents.start(node.url, task, 2, seed=seed)
        wait_until(lambda: rounds(node.url, task["id"]) >= 2, 60, "two rounds before the storm")
        kills, seed = 0, 100
        storm_end = time.monotonic() + 12
        while time.monotonic() < storm_end:
            live = agents.alive()
            if live:
                victim = rng.choice(live)
                victim.send_signal(signal.SIGKILL)
                victim.wait(10)
                kills += 1
            agents.start(node.url, task, 2, seed=seed)
            seed += 1
            time.sleep(1.0)
        _acks_grow(agents, len(agents.acknowledged()))
        final = drain_and_stop(node.url, task["id"], agents)
        assert kills >= 8
        _assert_nothing_lost(
            f"agent SIGKILL storm ({kills} kills)", node.url, task["id"], agents, started, final
        )
    finally:
        agents.stop()
        node.stop()
