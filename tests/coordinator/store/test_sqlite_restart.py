"""A single node on ``--store sqlite://`` survives ``kill -9``: restarted on the same file, it resumes the task.

A real ``blockopt serve`` process, a real ``blockopt fleet`` attached; the
coordinator is SIGKILLed mid-run (several times), started again on the same file
and port, and the fleet (which retries through the outage) carries the task to
a terminal state. Every proposal an agent was told was stored is in the books.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.chaos_support import Agents, count_losses, rounds, task_view, wait_terminal
from tests.redis_support import Replica, create_task, wait_until

SLOW_TASK = {
    "kind": "quadratic",
    "params": {"blocks": 8, "dim": 3, "coupling": 0.9},
    "merge_policy": "checked",
}
"""Strong coupling: dozens of rounds to converge, so every kill lands mid-run."""


@pytest.mark.slow
def test_kill_9_and_restart_on_the_same_file_loses_nothing(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 'state.db'}"
    node = Replica("node", store, "unused:", tmp_path / "node.log").start()
    agents = Agents(tmp_path)
    try:
        task = create_task(node, **SLOW_TASK)
        agents.start(node.url, task, 4, seed=1)
        started = time.monotonic()
        kills = 0
        for target in (3, 8, 14):  # three crashes, each after a few more committed rounds
            wait_until(lambda: rounds(node.url, task["id"]) >= target, 90, f"round {target}")
            before = task_view(node.url, task["id"])
            assert before is not None and before["status"] == "running"
            node.signal(signal.SIGKILL)
            node.proc.wait(10)  # type: ignore[union-attr]
            kills += 1
            node = Replica("node", store, "unused:", tmp_path / "node.log", port=node.port).start()
            resumed = task_view(node.url, task["id"])
            assert resumed is not None and resumed["status"] == "running"
            assert resumed["round"] >= before["round"] and resumed["version"] >= before["version"]
        final = wait_terminal(node.url, task["id"], 180)
        assert final["status"] == "optimal", final
        agents.stop()
        losses = count_losses(
            "coordinator kill -9 x3 (sqlite)", node.url, task["id"], agents.acknowledged(), started
        )
        assert losses.acknowledged > 0
        assert losses.lost == 0, losses
        assert kills == 3
    finally:
        agents.stop()
        node.stop()
