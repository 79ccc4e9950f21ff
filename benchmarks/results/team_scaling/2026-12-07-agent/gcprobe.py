"""The cyclic collector's work in a virtual replay, by generation and by thread.

    python gcprobe.py SECONDS AGENTS SEED [threshold]      # from a tree's root, PYTHONPATH=.

``threshold``: ``gc.set_threshold(50_000, 20, 100)`` first. Not a product module; it imports ``labrun.py``
from ``benchmarks/results/team_scaling``.
"""

from __future__ import annotations

import collections
import gc
import sys
import threading
import time
from typing import Any

sys.path.insert(0, "benchmarks/results/team_scaling")  # labrun.py

from labrun import replay_once  # noqa: E402

spent: collections.Counter[tuple[str, int]] = collections.Counter()
count: collections.Counter[int] = collections.Counter()
started: dict[int, float] = {}


def on_collect(phase: str, info: dict[str, Any]) -> None:
    tid = threading.get_ident()
    if phase == "start":
        started[tid] = time.thread_time()
        return
    now = time.thread_time()
    spent[(threading.current_thread().name[:12], info["generation"])] += now - started.pop(tid, now)
    count[info["generation"]] += 1


def main() -> None:
    gc.callbacks.append(on_collect)
    if len(sys.argv) > 4 and sys.argv[4] == "threshold":
        gc.set_threshold(50_000, 20, 100)
    run = replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [])
    print("objects", len(gc.get_objects()), "collections", dict(count))
    by_generation: collections.Counter[int] = collections.Counter()
    by_thread: collections.Counter[str] = collections.Counter()
    for (thread, generation), seconds in spent.items():
        by_generation[generation] += seconds
        by_thread[thread] += seconds
    total = round(sum(by_generation.values()), 2)
    print("gc cpu by generation", {g: round(s, 2) for g, s in by_generation.items()}, "total", total)
    print("gc cpu by thread", [(n, round(s, 2)) for n, s in by_thread.most_common(6)])
    print("agent cpu", round(sum(run["agent_cpu"]), 1), "coordinator busy", run["busy_fraction"])


if __name__ == "__main__":
    main()
