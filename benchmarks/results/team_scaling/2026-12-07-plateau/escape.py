"""What gets one core off a team's plateau: from a saved plan (stall_state.py's), one whole-plan search of
BlockSearch steps for CPU_SECONDS of thread CPU per variant, the best sum of costs logged against CPU.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS PLAN.json CPU_SECONDS SEED VARIANT...
VARIANT: wheel (the proposer's neighbourhoods: ALNS wheel over agent / intersection / random / spatial, 8
robots, a step kept when the sum of costs does not grow), sa-T (the same, a step kept when it grows by at
most -T ln u, u uniform: Metropolis' rule; the best plan kept aside), address-K (the seed robot drawn by
Thompson sampling among the K most delayed, Beta(1 + wins, 1 + misses) each, ADDRESS; its random walk's
robots re-planned), address-K-sa-T (both). The sa variants need ``annealing.patch``
(``BlockSearch.allowance``: the slack a collision-free step is searched with grows by the allowance drawn for
it); every other step is the tree's. SEED seeds the search's rng (run r of a variant: SEED r)."""

import json
import math
import random
import sys
import time

from lab import routing_config

from tasks.registry import create_task
from tasks.routing.destroy import delays, walk_from
from tasks.routing.lns import RoutingProposer
from tasks.routing.occupancy import cost
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations

plan_file, cpu_limit, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
variants = sys.argv[4:]
config = routing_config(16, 2, 0)


def parse(variant):
    top = temperature = 0
    parts = variant.split("-")
    if parts[0] == "address":
        top = int(parts[1])
    if "sa" in parts:
        temperature = float(parts[parts.index("sa") + 1])
    return top, temperature


def run(task, paths, variant):
    grid = task.grid
    inst = task.inst
    starts = list(inst.starts)
    goals = list(inst.goals)
    top, temperature = parse(variant)
    rng = random.Random(seed)
    proposer = RoutingProposer(grid, time_budget=1.0, neighbourhood=8, max_len=inst.max_len, seed=seed)
    proposer.rng = rng
    if temperature and not hasattr(BlockSearch, "allowance"):
        sys.exit("escape.py: the sa variants need annealing.patch applied to the checkout")
    search = BlockSearch(grid, starts, goals, paths, Reservations(grid.n_cells), inst.max_len, rng=rng)
    wins: dict[int, list[int]] = {}
    best, steps, kept_worse = search.soc, 0, 0
    t0 = time.thread_time()
    curve = [(0.0, best)]
    while time.thread_time() - t0 < cpu_limit:
        steps += 1
        if top:
            d = delays(grid, search.paths, starts, goals)
            ranked = sorted((i for i in range(len(d)) if d[i] > 0), key=lambda i: -d[i])[:top]
            pick = max(ranked, key=lambda i: rng.betavariate(*wins.setdefault(i, [1, 1])))
            group = walk_from(grid, search.paths[pick], goals[pick], [pick], 8, rng, search.index)
            if len(group) < 8:
                rest = [j for j in range(len(paths)) if j not in set(group)]
                group += rng.sample(rest, 8 - len(group))
            generator = None
        else:
            group, generator = proposer._neighbourhood(search, [], starts, goals)
        rng.shuffle(group)
        search.allowance = int(-temperature * math.log(1 - rng.random())) if temperature else 0
        before = search.soc
        _kept, _c, trial = search.try_group(group, None)
        if generator in proposer.wheel.weights:
            proposer.wheel.reward(generator, (before - trial) / len(group))
        if top:
            wins[pick][0 if search.soc < before else 1] += 1
        kept_worse += search.soc > before
        if search.soc < best:
            best = search.soc
            curve.append((round(time.thread_time() - t0, 2), best))
    return {"steps": steps, "kept_worse": kept_worse, "best": best, "end": search.soc, "curve": curve}


task = create_task("routing", dict(config.params))
grid = task.grid
paths = [tuple(p) for p in json.load(open(plan_file))["paths"]]
print(f"start {sum(cost(p) for p in paths)}", flush=True)
limit, cpu_limit = cpu_limit, 2.0
run(task, paths, "wheel")  # numba compiles SIPP on the first searches: not booked on any variant
cpu_limit = limit
out = {}
for variant in variants:
    r = run(task, paths, variant)
    out[variant] = r
    marks = [next((y for x, y in reversed(r["curve"]) if x <= t), None) for t in (5, 10, 20, 30, 60)]
    print(
        f"seed {seed} {variant:14s} steps {r['steps']}, kept worse {r['kept_worse']}, best {r['best']}, "
        f"end {r['end']}; best at 5/10/20/30/60 s CPU {marks}",
        flush=True,
    )
json.dump(out, open(f"escape-{seed}-{'_'.join(variants)}.json", "w"))
