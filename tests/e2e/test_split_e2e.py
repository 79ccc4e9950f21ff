"""The split mode end to end: ``blockopt serve --api-workers N --engine-workers M`` as real processes on a
real store, real agent worker processes solving a quadratic task to ``optimal``.

- Redis, 2 API + 2 engine processes: the engine that serves the task (``runtime/shards.py``) is killed
  with SIGKILL mid-run; the other takes the task over when the dead one's beat lapses and the task still
  ends ``optimal``; the supervisor reports the death on one line and exits 1 when stopped.
- SQLite, 1 API + 1 engine: the rounds run in the engine process only (its metrics count them, the API
  process's do not), while the API's /metrics still reports the task's rounds from the store.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from blockopt.supervisor import is_split, split_problem
from coordinator.runtime.shards import owner_of
from coordinator.settings import ServiceSettings
from tests.conftest import ADMIN, REPO
from tests.redis_support import free_port, redis_prefix, terminate, wait_until

__all__ = ["redis_prefix"]  # the fixture

TASK = {"kind": "quadratic", "params": {"blocks": 8, "dim": 3, "coupling": 0.9}, "merge_policy": "checked"}
"""Strong coupling: dozens of rounds, so a kill after a few lands mid-run."""
SMALL_TASK = {"kind": "quadratic", "params": {"blocks": 4, "dim": 3, "coupling": 0.3}}
SOLVE_TIMEOUT = 120.0


@dataclass
class SplitServe:
    """One ``blockopt serve`` supervisor and its children; its log goes to a file."""

    store: list[str]
    log_path: Path
    api_workers: int
    engine_workers: int
    extra: list[str] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> SplitServe:
        env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_ADMIN_TOKEN": ADMIN}
        argv = [sys.executable, "-m", "blockopt", "serve", "--port", str(self.port), *self.store]
        argv += ["--api-workers", str(self.api_workers), "--engine-workers", str(self.engine_workers)]
        argv += ["--round-lock-ttl", "1", "--lease-ttl", "3", "--round-deadline", "0.5", *self.extra]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_until(self.ready, 90, "the split coordinator's /readyz")
        return self

    def ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"blockopt serve exited: {self.log()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def pids(self, role: str) -> dict[int, int]:
        """Worker index -> pid, as the supervisor logged them."""
        found = re.findall(rf"{role} worker (\d+) started \(pid (\d+)\)", self.log())
        return {int(i): int(pid) for i, pid in found}

    def admin(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30.0)

    def stop(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            terminate(self.proc)
        return None if self.proc is None else self.proc.returncode


def fleet(url: str, task: dict[str, Any], agents: int, log_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_JOIN_TOKEN": task["join_token"]}
    argv = [sys.executable, "-m", "blockopt", "fleet", "--coordinator", url, "--task", task["id"]]
    argv += ["--agents", str(agents), "--processes", "1", "--log-level", "warning"]
    with log_path.open("ab") as log:
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def view(c: httpx.Client, task_id: str) -> dict[str, Any]:
    return dict(c.get(f"/v1/tasks/{task_id}").json())


def metric(text: str, name: str, task_id: str | None = None) -> float:
    """The sum of a metric's samples (those of ``task_id`` when given)."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and (task_id is None or f'task="{task_id}"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.fixture
def cleanup() -> Iterator[list[Any]]:
    things: list[Any] = []
    yield things
    for thing in reversed(things):
        if isinstance(thing, subprocess.Popen):
            if thing.poll() is None:
                terminate(thing)
        else:
            thing.stop()


@pytest.mark.slow
def test_redis_split_survives_an_engine_killed_mid_run(
    redis_prefix: tuple[str, str], tmp_path: Path, cleanup: list[Any]
) -> None:
    url, prefix = redis_prefix
    serve = SplitServe(["--store", url, "--redis-prefix", prefix], tmp_path / "serve.log", 2, 2)
    cleanup.append(serve)
    serve.start()
    engines = wait_until(lambda: len(serve.pids("engine")) == 2 and serve.pids("engine"), 10, "engine pids")
    with serve.admin() as c:
        created = c.post("/v1/tasks", json=TASK)
        assert created.status_code == 201, created.text
        task = created.json()
        agents = fleet(serve.url, task, 4, tmp_path / "fleet.log")
        cleanup.append(agents)
        at_kill = wait_until(
            lambda: (v := view(c, task["id"]))["round"] >= 3 and v, 60, "three rounds before the kill"
        )
        assert at_kill["status"] == "running", f"the task ended before the kill: {at_kill}"
        with redis.Redis.from_url(url, decode_responses=True) as r:  # the engine that serves the task
            runners = r.zrange(f"{prefix}engines", 0, -1)
        assert sorted(int(o.split(":")[1]) for o in runners) == sorted(engines.values()), runners
        victim = int(owner_of(task["id"], runners).split(":")[1])
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: f"(pid {victim}) was killed by SIGKILL" in serve.log(), 10, "the death report")
        done = wait_until(
            lambda: (v := view(c, task["id"]))["status"] != "running" and v, SOLVE_TIMEOUT, "the task to end"
        )
        assert done["status"] == "optimal", done
        assert done["round"] > at_kill["round"], "no round ran after the kill"
        scraped = c.get("/metrics").text  # an API process: task state read from the store at scrape time
        assert metric(scraped, "blockopt_rounds_total", task["id"]) == done["round"]
    survivors = [pid for pid in engines.values() if pid != victim]
    assert all(alive(pid) for pid in survivors)
    reports = [ln for ln in serve.log().splitlines() if ln.startswith("blockopt serve:")]
    assert len(reports) == 1, reports  # one line for the one death
    assert serve.stop() == 1  # a child died: stopping afterwards still says so
    children = [*serve.pids("api").values(), *survivors]
    assert not any(alive(pid) for pid in children), "a child outlived the supervisor"


@pytest.mark.slow
def test_sqlite_split_runs_rounds_in_the_engine_process_only(tmp_path: Path, cleanup: list[Any]) -> None:
    metrics_port = free_port()
    store = ["--store", f"sqlite:///{tmp_path / 'state.db'}"]
    serve = SplitServe(store, tmp_path / "serve.log", 1, 1, ["--engine-metrics-port", str(metrics_port)])
    cleanup.append(serve)
    serve.start()
    with serve.admin() as c:
        task = c.post("/v1/tasks", json=SMALL_TASK).json()
        agents = fleet(serve.url, task, 4, tmp_path / "fleet.log")
        cleanup.append(agents)
        done = wait_until(
            lambda: (v := view(c, task["id"]))["status"] != "running" and v, SOLVE_TIMEOUT, "the task to end"
        )
        assert done["status"] == "optimal", done
        api_metrics = c.get("/metrics").text
    engine_metrics = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
    rounds = 'blockopt_round_duration_seconds_count{mode="rounds"}'
    assert metric(engine_metrics, rounds) >= done["round"] > 0  # the engine ran every round
    assert metric(api_metrics, rounds) == 0  # the API process ran none
    assert metric(api_metrics, "blockopt_rounds_total", task["id"]) == done["round"]
    assert "process_cpu_seconds_total" in engine_metrics
    assert serve.stop() == 0  # a clean stop: every child stopped on SIGTERM


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"engine_workers": 1}, "need a shared store"),
        ({"engine_workers": 0}, "need a shared store"),
        ({"api_workers": 2}, "need a shared store"),
        ({"store": "redis", "api_workers": 0}, "--api-workers 0 needs --engine-workers"),
        ({"store": "redis", "api_workers": 0, "engine_workers": 0}, "--api-workers 0 needs --engine-workers"),
    ],
)
def test_worker_counts_that_cannot_run_are_refused(fields: dict[str, Any], message: str) -> None:
    assert message in (split_problem(ServiceSettings(**fields)) or "")


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"store": "redis", "api_workers": 2},
        {"store": "redis", "api_workers": 0, "engine_workers": 1},
        {"store": "sqlite", "sqlite_path": "x.db", "api_workers": 1, "engine_workers": 0},
    ],
)
def test_worker_counts_that_can_run_are_accepted(fields: dict[str, Any]) -> None:
    assert split_problem(ServiceSettings(**fields)) is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--engine-workers", "1"], "need a shared store"), (["--engine-workers", "-1"], "--engine-workers")],
)
def test_serve_refuses_bad_worker_counts_with_one_line(argv: list[str], message: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_ADMIN_TOKEN": ADMIN}
    done = subprocess.run(
        [sys.executable, "-m", "blockopt", "serve", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_a_single_process_serve_is_not_split() -> None:
    assert not is_split(ServiceSettings())
    assert is_split(ServiceSettings(store="redis", api_workers=2))
    assert is_split(ServiceSettings(store="redis", engine_workers=0))
