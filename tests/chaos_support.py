"""Counting losses under faults: what the agents were told was stored, against what the books hold.

An agent's proposal is *acknowledged* when ``POST .../proposals`` answered 2xx
(``agents.worker`` then logs ``proposal <id> acknowledged`` at debug level).
Fleets here run at debug level into a log file, so every acknowledgement is on
disk even for an agent killed with SIGKILL a moment later. The books are the
task's trajectories (every stored proposal with its verdict, or ``pending``).
A loss is an acknowledged id missing from the books; a proposal without a
verdict at the end is counted too (``unjudged``): it is in the ledger, still
queued when the task ended.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from coordinator.status import TERMINAL
from tests.conftest import ADMIN, REPO

ACK = re.compile(r"proposal ([0-9a-f]{32}) acknowledged")
RESULTS_ENV = "BLOCKOPT_CHAOS_RESULTS"
"""When set, each chaos test appends its counts (one JSON object) to this file (for BENCHMARKS.md)."""


@dataclass
class Agents:
    """``blockopt fleet`` processes at debug level, each logging to its own file."""

    workdir: Path
    procs: list[tuple[subprocess.Popen[bytes], Path]] = field(default_factory=list)

    def start(self, url: str, task: dict[str, Any], agents: int, seed: int) -> subprocess.Popen[bytes]:
        log = self.workdir / f"agents-{seed}.log"
        env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_JOIN_TOKEN": task["join_token"]}
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "blockopt",
                    "fleet",
                    "--coordinator",
                    url,
                    "--task",
                    task["id"],
                    "--agents",
                    str(agents),
                    "--processes",
                    "1",
                    "--seed",
                    str(seed),
                    "--name",
                    f"f{seed}",
                    "--log-level",
                    "debug",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.procs.append((proc, log))
        return proc

    def acknowledged(self) -> set[str]:
        ids: set[str] = set()
        for path in self.workdir.glob("agents-*.log"):
            ids |= set(ACK.findall(path.read_text(errors="replace")))
        return ids

    def alive(self) -> list[subprocess.Popen[bytes]]:
        return [p for p, _ in self.procs if p.poll() is None]

    def stop(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def admin(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30.0)


def task_view(url: str, task_id: str) -> dict[str, Any] | None:
    try:
        with admin(url) as c:
            r = c.get(f"/v1/tasks/{task_id}")
    except httpx.HTTPError:
        return None
    return dict(r.json()) if r.status_code == 200 else None


def rounds(url: str, task_id: str) -> int:
    view = task_view(url, task_id)
    return int(view["round"]) if view else 0


def ledger(url: str, task_id: str) -> dict[str, str]:
    """Proposal id -> verdict status (``pending`` when it has none) from the task's trajectories."""
    with admin(url) as c:
        r = c.get(f"/v1/tasks/{task_id}/trajectories")
    assert r.status_code == 200, r.text
    lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    return {line["id"]: line["verdict"] for line in lines if line["type"] == "proposal"}


@dataclass(frozen=True)
class Losses:
    scenario: str
    status: str
    acknowledged: int
    stored: int
    with_verdict: int
    lost: int
    """Acknowledged but not in the books: must be 0."""
    unjudged: int
    """Acknowledged, in the books, without a verdict (still queued when the task ended)."""
    seconds: float

    def record(self) -> None:
        path = os.environ.get(RESULTS_ENV)
        if path:
            with open(path, "a") as out:
                out.write(json.dumps(self.__dict__) + "\n")
        print(
            f"{self.scenario}: {self.status}; acknowledged {self.acknowledged}, stored {self.stored}, "
            f"with a verdict {self.with_verdict}, lost {self.lost}, unjudged {self.unjudged}"
        )


def count_losses(scenario: str, url: str, task_id: str, acknowledged: set[str], started: float) -> Losses:
    books = ledger(url, task_id)
    view = task_view(url, task_id)
    status = view["status"] if view else "unknown"
    acked_in_books = [books[pid] for pid in acknowledged if pid in books]
    result = Losses(
        scenario=scenario,
        status=status,
        acknowledged=len(acknowledged),
        stored=len(books),
        with_verdict=sum(1 for v in books.values() if v != "pending"),
        lost=len(acknowledged - books.keys()),
        unjudged=sum(1 for v in acked_in_books if v == "pending"),
        seconds=round(time.monotonic() - started, 1),
    )
    result.record()
    return result


def wait_terminal(url: str, task_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        view = task_view(url, task_id)
        if view is not None and view["status"] in TERMINAL:
            return view
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} not finished after {timeout:.0f}s: {view}")
        time.sleep(0.2)


def drain_and_stop(url: str, task_id: str, agents: Agents, timeout: float = 60.0) -> dict[str, Any]:
    """Stop the agents (SIGTERM: they release their leases), let the coordinator judge everything queued,
    then stop the task: it ends in a terminal state with every stored proposal judged."""
    agents.stop()
    deadline = time.monotonic() + timeout
    while "pending" in ledger(url, task_id).values():
        if time.monotonic() > deadline:
            raise AssertionError("proposals still pending after the agents stopped")
        time.sleep(0.2)
    with admin(url) as c:
        r = c.post(f"/v1/tasks/{task_id}/stop")
        assert r.status_code == 200, r.text
    return wait_terminal(url, task_id, timeout)
