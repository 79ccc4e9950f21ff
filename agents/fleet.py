"""Run N workers: as threads in this process, or spread over child processes.

A fleet of P processes runs ``blockopt fleet --processes 1`` children, each
with its share of threads; the join token goes to children through the
environment (BLOCKOPT_JOIN_TOKEN), never the command line. SIGTERM/SIGINT to
the fleet stops every worker cleanly (children get SIGTERM and release leases).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

from agents.worker import Worker, WorkerConfig, WorkerStats

log = logging.getLogger("blockopt.fleet")


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal positive counts."""
    parts = max(1, min(parts, total))
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_threads(
    base: WorkerConfig, agents: int, first_index: int = 0, stop: threading.Event | None = None
) -> list[WorkerStats]:
    """``agents`` workers in threads of this process; agent i gets seed base.seed*1000 + i."""
    stop = stop or threading.Event()
    results: list[WorkerStats] = []
    workers = [
        Worker(
            dataclasses.replace(
                base, name=f"{base.name}-{first_index + i}", seed=base.seed * 1000 + first_index + i
            ),
            stop,
        )
        for i in range(agents)
    ]
    if len(workers) == 1:
        return [workers[0].run()]
    threads = [
        threading.Thread(target=lambda w=w: results.append(w.run()), name=w.config.name, daemon=True)
        for w in workers
    ]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.2)
    return results


def child_argv(base: WorkerConfig, agents: int, first_index: int, log_level: str) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "blockopt",
        "fleet",
        "--coordinator",
        base.coordinator,
        "--task",
        base.task,
        "--agents",
        str(agents),
        "--processes",
        "1",
        "--first-index",
        str(first_index),
        "--proposer",
        base.proposer,
        "--name",
        base.name,
        "--seed",
        str(base.seed),
        "--log-level",
        log_level,
    ]
    for key, value in base.proposer_options.items():
        argv += ["--proposer-option", f"{key}={value}"]
    return argv


def spawn(
    base: WorkerConfig, agents: int, processes: int, log_level: str = "warning"
) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "BLOCKOPT_JOIN_TOKEN": base.join_token}
    children, first = [], 0
    for count in shares(agents, processes):
        children.append(subprocess.Popen(child_argv(base, count, first, log_level), env=env))
        first += count
    return children


def terminate(children: Sequence[subprocess.Popen[bytes]], timeout: float = 10.0) -> list[int]:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    codes = []
    for child in children:
        try:
            codes.append(child.wait(timeout))
        except subprocess.TimeoutExpired:
            child.kill()
            codes.append(child.wait())
    return codes


def run_fleet(
    base: WorkerConfig,
    agents: int,
    processes: int,
    first_index: int = 0,
    stop: threading.Event | None = None,
    log_level: str = "warning",
) -> int:
    """Run until the task ends or ``stop`` is set; the exit code is 0 when every worker ended cleanly."""
    stop = stop or threading.Event()
    if processes <= 1:
        stats = run_threads(base, agents, first_index, stop)
        bad = [s for s in stats if s.ended not in ("task_finished", "budget_exceeded", "stopped")]
        return 1 if bad else 0
    children = spawn(base, agents, processes, log_level)
    while not stop.is_set() and any(c.poll() is None for c in children):
        stop.wait(0.2)
    codes = terminate(children)
    return 0 if all(c == 0 for c in codes) else 1
