"""How much LNS work a thread's CPU second buys, alone or beside copies of itself: 6,000 fixed LNS steps
(random groups of 8 from rng seed 1) on the stalled 300-robot plan, timed in thread CPU and wall seconds.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS STALL_JSON LABEL
"""

import json
import random
import sys
import time

from tasks.registry import create_task
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations

task = create_task("routing", {"blocks": 1, "map": "random-32-32-10", "robots": 300, "seed": 2})
paths = [tuple(p) for p in json.load(open(sys.argv[1]))["paths"]]
inst = task.inst
warm = BlockSearch(task.grid, inst.starts, inst.goals, paths, Reservations(task.grid.n_cells), inst.max_len)
warm.try_group([0, 1], None)  # compiles SIPP before the clock starts
rng = random.Random(1)
search = BlockSearch(
    task.grid, inst.starts, inst.goals, paths, Reservations(task.grid.n_cells), inst.max_len, rng=rng
)
cpu, wall = time.thread_time(), time.perf_counter()
for _ in range(6000):
    search.try_group(rng.sample(range(len(paths)), 8), None)
cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
print(f"{sys.argv[2]}: thread CPU {cpu:.2f} s, wall {wall:.2f} s, sum of costs {search.soc}", flush=True)
