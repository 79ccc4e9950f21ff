"""A plan part way down (to check that ``window_exact.py`` finds gains where there are some): the replay
instance's first plan (seed 2), then one BlockSearch's steps (the proposer's neighbourhoods, rng 5) for 8 s of
thread CPU, SIPP's compilation included; written to mid-plan-s2.json.

Run from a checkout: PYTHONPATH=. python THIS"""

import json
import random
import time

from lab import routing_config

from tasks.registry import create_task
from tasks.routing.lns import RoutingProposer
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations

task = create_task("routing", dict(routing_config(16, 2, 0).params))
grid, inst = task.grid, task.inst
starts, goals = list(inst.starts), list(inst.goals)
rng = random.Random(5)
proposer = RoutingProposer(grid, time_budget=1.0, neighbourhood=8, max_len=inst.max_len, seed=5)
proposer.rng = rng
first = task.initial_state().paths
search = BlockSearch(grid, starts, goals, first, Reservations(grid.n_cells), inst.max_len, rng=rng)
t0 = time.thread_time()
while time.thread_time() - t0 < 8:
    group, _generator = proposer._neighbourhood(search, [], starts, goals)
    rng.shuffle(group)
    search.try_group(group, None)
print(search.soc, search.collisions)
json.dump(
    {"seed": 2, "objective": search.soc, "paths": [list(p) for p in search.paths]},
    open("mid-plan-s2.json", "w"),
)
