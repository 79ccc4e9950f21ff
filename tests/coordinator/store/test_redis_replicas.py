"""Several real coordinator processes over one real Redis: replicas, failover, fencing, restarts.

Every test runs ``blockopt serve --store redis://...`` processes on loopback
ports, ``blockopt fleet`` processes spread over them, and tracking agents (the
real worker, recording which proposals were acknowledged) in threads. It then
checks the books straight from Redis: round indices 0..n-1 each once, versions
never going back, every acknowledged proposal stored, and every proposal
acknowledged before a fault given a verdict after it. Polls, never fixed sleeps.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from agents.worker import Worker, WorkerConfig
from coordinator.store.redis import KeySpace
from tests.conftest import ADMIN
from tests.redis_support import (
    Fleet,
    PrivateRedis,
    Replica,
    create_task,
    new_prefix,
    purge,
    require_redis,
    view,
    wait_until,
)

TASK = {"kind": "quadratic", "params": {"blocks": 8, "dim": 3, "coupling": 0.3}, "merge_policy": "checked"}
BIG_TASK = {
    "kind": "quadratic",
    "params": {"blocks": 24, "dim": 4, "coupling": 0.3},
    "merge_policy": "checked",
}
"""Rounds of ~24 proposals: the engine holds the round lock long enough to catch it there."""
SLOW_TASK = {**TASK, "params": {"blocks": 8, "dim": 3, "coupling": 0.9}}
"""Strong coupling: dozens of rounds to converge, so a stop after three always lands mid-run."""
SOLVE_TIMEOUT = 180.0


class TrackingWorker(Worker):
    """The real agent worker, also recording the ids of proposals the coordinator acknowledged."""

    def __init__(self, config: WorkerConfig, stop: threading.Event, acked: list[tuple[float, str]]) -> None:
        super().__init__(config, stop)
        self.acked = acked

    def _submit(self, body: dict[str, Any]) -> dict[str, Any] | None:
        before = self.stats.proposals
        verdict = super()._submit(body)
        if self.stats.proposals > before:
            self.acked.append((time.monotonic(), body["id"]))
        return verdict


@dataclass
class Cluster:
    """Replicas, fleets and tracking agents of one test, all stopped at the end; books read from Redis."""

    url: str
    prefix: str
    workdir: Path
    lock_ttl: float = 2.0
    replicas: list[Replica] = field(default_factory=list)
    fleets: list[Fleet] = field(default_factory=list)
    trackers: list[threading.Thread] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    acked: list[tuple[float, str]] = field(default_factory=list)

    def replica(self, name: str) -> Replica:
        return self.start_replicas(name)[0]

    def start_replicas(self, *names: str) -> list[Replica]:
        """Launch the processes together, then wait for each to be ready (start-up is the slow part)."""
        started = [
            Replica(n, self.url, self.prefix, self.workdir / f"{n}.log", lock_ttl=self.lock_ttl)
            for n in names
        ]
        self.replicas += started
        for r in started:
            r.launch()
        for r in started:
            r.wait_ready()
        return started

    def fleet(self, replica: Replica, task: dict[str, Any], agents: int, seed: int) -> None:
        self.fleets.append(Fleet.start(replica, task, agents, self.workdir / f"fleet{seed}.log", seed))

    def tracker(self, replica: Replica, task: dict[str, Any], seed: int) -> None:
        config = WorkerConfig(
            coordinator=replica.url,
            task=task["id"],
            join_token=task["join_token"],
            name=f"tracker{seed}",
            seed=seed,
            poll_wait=1.0,
            max_retries=3,
        )
        worker = TrackingWorker(config, self.stop, self.acked)
        thread = threading.Thread(target=worker.run, name=f"tracker{seed}", daemon=True)
        thread.start()
        self.trackers.append(thread)

    def close(self) -> None:
        self.stop.set()
        for f in self.fleets:
            f.stop()
        for r in self.replicas:
            r.stop()
        for t in self.trackers:
            t.join(30)

    # -- the books, read from Redis -------------------------------------------------
    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True)

    def books(self, task_id: str) -> dict[str, Any]:
        k = KeySpace(self.prefix).task(task_id)
        with self.redis() as r:
            return {
                "rounds": [json.loads(x)["record"] for x in r.lrange(k.rounds, 0, -1)],
                "proposals": set(r.hkeys(k.proposals)),
                "verdicts": set(r.hkeys(k.verdicts)),
                "lock": r.hgetall(k.lock),
                "committed_fence": int(r.hget(k.runtime, "fence") or 0),
            }

    def check_books(self, task_id: str, verdict_before: float | None = None) -> dict[str, Any]:
        """The invariants every fault must keep."""
        b = self.books(task_id)
        rounds = b["rounds"]
        assert [r["round"] for r in rounds] == list(range(len(rounds))), (
            "a round was committed twice or skipped"
        )
        for prev, cur in zip(rounds, rounds[1:]):
            assert cur["version"] >= prev["version"], "the version went back"
            if cur["accepted"]:
                assert cur["version"] > prev["version"], "a merging round did not increase the version"
        acked = [pid for _, pid in self.acked]
        assert set(acked) <= b["proposals"], "an acknowledged proposal is missing from the store"
        if verdict_before is not None:
            early = {pid for t, pid in self.acked if t < verdict_before}
            assert early <= b["verdicts"], (
                f"{len(early - b['verdicts'])} acknowledged proposals never got a verdict"
            )
        return b

    def finished(self, replica: Replica, task_id: str) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            v = view(replica, task_id)
            return v if v is not None and v["status"] != "running" else None

        result: dict[str, Any] = wait_until(done, SOLVE_TIMEOUT, f"task {task_id} to finish", every=0.2)
        return result

    def lock_holder(self, task_id: str, min_age: float = 0.0) -> tuple[Replica, int]:
        """Freeze the replica that holds the task's round lock *before* it commits; return it and its fence.

        SIGSTOP first, then confirm from Redis that the lock is still its own, was
        granted (or last renewed) at least ``min_age`` ago (past the re-check under
        the lock, inside the engine) and its fence has not committed; otherwise let
        it go on and retry.
        """
        by_pid = {r.proc.pid: r for r in self.replicas if r.proc is not None and r.proc.poll() is None}

        def catch() -> tuple[Replica, int] | None:
            lock = self.books(task_id)["lock"]
            if not lock:
                return None
            pid = int(lock["owner"].split(":")[1])
            holder = by_pid.get(pid)
            if holder is None:
                return None
            holder.signal(signal.SIGSTOP)
            b = self.books(task_id)
            age = time.time() - (float(lock["expires_at"]) - self.lock_ttl)
            if (
                b["lock"].get("owner") == lock["owner"]
                and b["committed_fence"] < int(b["lock"]["fence"])
                and age >= min_age
            ):
                return holder, int(b["lock"]["fence"])
            holder.signal(signal.SIGCONT)
            return None

        result: tuple[Replica, int] = wait_until(
            catch, 120, "a replica holding the round lock mid-round", every=0.002
        )
        return result


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    url = require_redis()
    c = Cluster(url, new_prefix(), tmp_path)
    try:
        yield c
    finally:
        c.close()
        assert purge(url, c.prefix) == [], f"keys left under {c.prefix}"


def _metric(replica: Replica, name: str, task_id: str) -> float | None:
    text = httpx.get(f"{replica.url}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith(name) and f'task="{task_id}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def _busy_pair(cluster: Cluster) -> tuple[Replica, Replica, dict[str, Any]]:
    """Two replicas, one task, a fleet and a tracking agent on each (agents spread over both)."""
    a, b = cluster.start_replicas("a", "b")
    task = create_task(a, **TASK)
    for seed, replica in enumerate((a, b), start=1):
        cluster.fleet(replica, task, 3, seed=seed)
        cluster.tracker(replica, task, seed=seed + 2)
    return a, b, task


def test_two_replicas_solve_to_the_optimum(cluster: Cluster) -> None:
    a, b, task = _busy_pair(cluster)
    v = cluster.finished(b, task["id"])
    assert v["status"] == "optimal", v
    assert v["relative_gap"] <= 1e-8
    assert view(a, task["id"]) == view(b, task["id"])  # any replica serves any request, same answer
    books = cluster.check_books(task["id"])
    assert len(books["rounds"]) == v["round"]
    assert cluster.acked, "the tracking agents got nothing acknowledged"
    received = [_metric(r, "blockopt_proposals_received", task["id"]) for r in (a, b)]
    assert received[0] is not None and received[0] == received[1], received  # metrics read from the store


def test_sigkill_of_the_lock_holder_fails_over(cluster: Cluster) -> None:
    a, b, task = _busy_pair(cluster)
    holder, fence = cluster.lock_holder(task["id"])
    survivor = b if holder is a else a
    holder.signal(signal.SIGKILL)
    holder.proc.wait(10)  # type: ignore[union-attr]
    killed_at = time.monotonic()
    wait_until(lambda: cluster.books(task["id"])["committed_fence"] > fence, 60, "another replica to commit")
    failover = time.monotonic() - killed_at
    print(
        f"failover: a round committed {failover:.2f}s after SIGKILL of the lock holder "
        f"(round lock TTL {cluster.lock_ttl}s)"
    )
    (cluster.workdir / "failover.txt").write_text(f"{failover:.3f}\n")
    if survivor is a:  # the killed replica's fleet has nobody to talk to: give the survivor enough agents
        cluster.fleet(a, task, 3, seed=5)
    v = cluster.finished(survivor, task["id"])
    assert v["status"] == "optimal", v
    cluster.check_books(task["id"], verdict_before=killed_at)


@pytest.mark.slow  # catching the holder inside its engine may take a few tries
def test_paused_lock_holder_cannot_commit_late(cluster: Cluster) -> None:
    """SIGSTOP the lock holder inside a round, let its lock lapse and another replica commit, SIGCONT it:
    its commit is refused by the fencing token. The task never stops by itself (rounds keep coming), and
    a catch that landed after the holder's engine (it then has nothing to commit) is simply tried again."""
    a, b = cluster.start_replicas("a", "b")
    task = create_task(
        a,
        **{
            **BIG_TASK,
            "stop": {"relative_gap": 0.0, "stall_rounds": 1_000_000},
            "budgets": {"rounds": 1_000_000},
        },
    )
    cluster.fleet(a, task, 12, seed=1)
    cluster.fleet(b, task, 12, seed=2)
    cluster.tracker(a, task, seed=3)
    cluster.tracker(b, task, seed=4)
    refused = False
    deadline = time.monotonic() + 150
    while not refused:
        assert time.monotonic() < deadline, "no late commit was caught and refused"
        holder, fence = cluster.lock_holder(task["id"], min_age=0.005)
        stopped_at = time.monotonic()
        wait_until(
            lambda: cluster.books(task["id"])["committed_fence"] > fence,
            60,
            "the other replica to take the lapsed lock and commit",
        )
        holder.signal(signal.SIGCONT)
        try:
            wait_until(
                lambda: f"fencing token {fence} is stale" in holder.log(),
                10,
                "the resumed replica's late commit to be refused",
            )
            refused = True
        except AssertionError:
            continue
    with httpx.Client(base_url=a.url, headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
        assert admin.post(f"/v1/tasks/{task['id']}/stop").status_code == 200
    cluster.check_books(task["id"], verdict_before=stopped_at)


@pytest.mark.slow
def test_redis_restart_under_load(tmp_path: Path) -> None:
    """A private redis-server (AOF, fsync always) is killed and restarted while agents work."""
    server = PrivateRedis(tmp_path)
    server.start()
    c = Cluster(server.url, new_prefix(), tmp_path)
    try:
        a, b = c.start_replicas("a", "b")
        task = create_task(a, **TASK)
        c.fleet(a, task, 3, seed=1)
        c.fleet(b, task, 3, seed=2)
        c.tracker(a, task, seed=3)
        c.tracker(b, task, seed=4)
        wait_until(lambda: len(c.books(task["id"])["rounds"]) >= 2, 60, "two rounds before the restart")
        server.kill()
        killed_at = time.monotonic()
        server.start()
        v = c.finished(b, task["id"])
        assert v["status"] == "optimal", v
        assert view(a, task["id"]) == v  # both replicas reconnected: they read the same books again
        c.check_books(task["id"], verdict_before=killed_at)
    finally:
        c.close()
        if server.ping():
            assert purge(server.url, c.prefix) == []
        server.kill()


@pytest.mark.slow
def test_restart_and_resume(cluster: Cluster) -> None:
    """Stop every coordinator; start one again: the task continues from its last committed round."""
    a, b = cluster.start_replicas("a", "b")
    task = create_task(a, **SLOW_TASK)
    cluster.fleet(a, task, 3, seed=1)
    cluster.tracker(b, task, seed=3)
    wait_until(lambda: len(cluster.books(task["id"])["rounds"]) >= 3, 60, "three rounds before the stop")
    for r in (a, b):  # coordinators first: a fleet winding down must not see the task through to the end
        r.signal(signal.SIGKILL)
        r.proc.wait(10)  # type: ignore[union-attr]
    for f in cluster.fleets:
        f.stop()
    stopped_at = time.monotonic()
    before = cluster.books(task["id"])
    assert view(a, task["id"]) is None and view(b, task["id"]) is None  # nothing serves the task now
    c = cluster.replica("c")
    resumed = view(c, task["id"])
    assert resumed is not None and resumed["status"] == "running"
    assert resumed["round"] >= len(before["rounds"])  # it may already have closed the round that was due
    cluster.fleet(c, task, 4, seed=6)
    v = cluster.finished(c, task["id"])
    assert v["status"] == "optimal", v
    after = cluster.check_books(task["id"], verdict_before=stopped_at)
    assert after["rounds"][: len(before["rounds"])] == before["rounds"]  # history kept, continued after it
    assert len(after["rounds"]) > len(before["rounds"])
