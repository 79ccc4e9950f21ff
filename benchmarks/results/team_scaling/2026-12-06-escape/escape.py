"""Off the plateau? One core searches the plan a 16-agent team stalled on, its LNS steps allowed to raise the
sum of costs by up to ALLOW (the best plan seen is kept; the walk goes back to it once it is CAP above).

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS STALL_JSON SEED CPU_SECONDS ALLOW [CAP [IDLE]]
STALL_JSON: a plan saved by 2026-12-06-late/stall_state.py. ALLOW 0 is the LNS as it is (every step keeps
the sum of costs or lowers it). IDLE > 0: after IDLE steps without a new best the walk also goes back to
the best plan, its equal-cost moves dropped, as a lease's search that found nothing is dropped (a search
ends after ``stop_after`` such steps: 100 for one agent, 300 for a team's); 0: never.
A lab patch, not the product: each robot's SIPP bound in a collision-free
trial (``BlockSearch._clean``) gets ALLOW more steps; the trial's own slack accounting makes it the
group's total, so a kept trial raises the sum of costs by at most ALLOW.
"""

import json
import random
import sys
import time

import tasks.routing.repair as repair
from benchmarks.team_scaling import at_marks
from tasks.registry import create_task
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations

stall, seed, cpu_limit, allow = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
cap = int(sys.argv[5]) if len(sys.argv) > 5 else 3 * allow
idle_limit = int(sys.argv[6]) if len(sys.argv) > 6 else 0

_sipp = repair.sipp_search


def sipp_with_allowance(*args, bound=None, **kwargs):  # type: ignore[no-untyped-def]
    return _sipp(*args, bound=None if bound is None else bound + allow, **kwargs)


repair.sipp_search = sipp_with_allowance

params = {"blocks": 17, "map": "random-32-32-10", "robots": 300, "seed": seed}
task = create_task("routing", params)
paths = [tuple(p) for p in json.load(open(stall))["paths"]]
grid, inst = task.grid, task.inst
proposer = task.make_proposer(task.ProposerParams(), seed + 100)
rng = random.Random(seed)


def fresh(plan: list) -> BlockSearch:
    return BlockSearch(grid, inst.starts, inst.goals, plan, Reservations(grid.n_cells), inst.max_len, rng=rng)


search = fresh(paths)
best, best_paths = search.soc, list(search.paths)
start = best
t0 = time.thread_time()
steps = restarts = idle = 0
curve = [(0.0, best)]
while time.thread_time() - t0 < cpu_limit:
    group, _ = proposer._neighbourhood(search, [], inst.starts, inst.goals)
    rng.shuffle(group)
    search.try_group(group, None)
    steps += 1
    idle += 1
    if search.soc < best:
        best, best_paths, idle = search.soc, list(search.paths), 0
        curve.append((round(time.thread_time() - t0, 2), best))
    elif search.soc > best + cap or (idle_limit and idle >= idle_limit):
        search, idle = fresh(best_paths), 0
        restarts += 1
print(
    f"seed {seed} allow {allow} cap {cap} idle {idle_limit}: start {start}, best {best}"
    f" after {cpu_limit:g} s CPU, {steps} steps, {restarts} returns to the best; best {at_marks(curve)}",
    flush=True,
)
