"""The garbage collector's share of a virtual replay's CPU, by generation.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS
From 7abf35d on the replay settles its heap as every process of a team does
(coordinator/runtime/heap.py); older trees run with Python's defaults."""

import asyncio
import gc
import sys
import time

from lab import routing_config

from benchmarks.lib import virtual_team as vt

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
spent = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
started = [0.0]


def on_gc(phase: str, info: dict) -> None:
    if phase == "start":
        started[0] = time.thread_time()
    else:
        row = spent[info["generation"]]
        row[0] += 1
        row[1] += time.thread_time() - started[0]


replay = vt.Replay(routing_config(agents, seed, secs))
gc.callbacks.append(on_gc)
t0 = time.thread_time()
result = asyncio.run(replay.run())
total = time.thread_time() - t0
by_generation = {g: f"{n} collections, {s:.2f} s" for g, (n, s) in spent.items()}
print(
    f"N={agents} seed={seed} {secs} s: thread CPU {total:.1f} s; collector {by_generation};"
    f" objects at the end {len(gc.get_objects())}; head {result.commits[-1] if result.commits else None}"
)
