"""Do parallel searches from one late plan find different gains? From a saved plan (stall_state.py's), LOOPS
whole-plan searches (the proposer's neighbourhoods, one BlockSearch step after another, each its own rng) run
CPU_SECONDS of thread CPU each, one after another, with nobody merging. Each gives back its walk where the
old path still fits (``put_back``, as an answer does); then their changes are merged onto the plan one
search at a time, largest gain first, a search's whole change kept only when the plan stays collision-free
and gains. Printed: each search's gain and robots changed, the merged gain, and one search's gain for
LOOPS x CPU_SECONDS (what one core makes of the same CPU).

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS PLAN.json LOOPS CPU_SECONDS [put_back|core]
core: each search's change cut to the robots whose cost fell and those their new paths then collide with,
closed under collisions (``core``), instead of what ``put_back`` leaves."""

import json
import random
import sys

from lab import routing_config, walk

from tasks.registry import create_task
from tasks.routing.lns import RoutingProposer
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations

plan_file, loops, cpu = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
MODE = sys.argv[4] if len(sys.argv) > 4 else "put_back"
task = create_task("routing", dict(routing_config(16, 2, 0).params))
grid, inst = task.grid, task.inst
starts, goals = list(inst.starts), list(inst.goals)
base = [tuple(p) for p in json.load(open(plan_file))["paths"]]


def search_from(paths, seed, seconds):
    rng = random.Random(seed)
    proposer = RoutingProposer(grid, time_budget=1.0, neighbourhood=8, max_len=inst.max_len, seed=seed)
    proposer.rng = rng
    search = BlockSearch(grid, starts, goals, paths, Reservations(grid.n_cells), inst.max_len, rng=rng)
    walk(search, proposer, seconds)
    return search


search_from(base, 0, 2.0)  # numba compiles SIPP on the first searches
base_soc = BlockSearch(grid, starts, goals, base, Reservations(grid.n_cells), inst.max_len).soc


def core(now):
    """The robots whose cost fell, with their new paths, and every robot whose old path then collides with
    one of those, with its new path too, until nothing collides: the least of the walk an answer needs."""
    probe = BlockSearch(grid, starts, goals, base, Reservations(grid.n_cells), inst.max_len)
    changed = {r: p for r, p in enumerate(now) if len(p) < len(base[r])}
    taken = dict(changed)
    probe._replace(changed)
    while probe.collisions:
        changed = {r: now[r] for r in probe._colliding_with(changed) if r not in taken}
        if not changed:
            break
        taken.update(changed)
        probe._replace(changed)
    assert probe.collisions == 0
    return base_soc - probe.soc, taken


finds = []
for i in range(loops):
    s = search_from(base, 1000 + i, cpu)
    s.put_back(base)
    diff = {r: p for r, p in enumerate(s.paths) if p != base[r]}
    small_gain, small = core(s.paths)
    finds.append((base_soc - s.soc, diff) if MODE == "put_back" else (small_gain, small))
    print(
        f"search {i}: gain {base_soc - s.soc}, robots changed {len(diff)}; core: gain {small_gain}, "
        f"robots {len(small)}",
        flush=True,
    )

merged = BlockSearch(grid, starts, goals, base, Reservations(grid.n_cells), inst.max_len)
kept = 0
for gain, diff in sorted(finds, key=lambda f: -f[0]):
    if gain <= 0:
        continue
    old = {r: merged.paths[r] for r in diff}
    soc = merged.soc
    merged._replace(diff)
    if merged.collisions or merged.soc >= soc:
        merged._replace(old)
    else:
        kept += 1
overlap = [len(set(a[1]) & set(b[1])) for j, a in enumerate(finds) for b in finds[j + 1 :]]
print(
    f"{loops} searches of {cpu} s: gains {sorted((g for g, _ in finds), reverse=True)}; "
    f"merged {kept} of them: gain {base_soc - merged.soc}; robots shared by two searches, mean "
    f"{sum(overlap) / max(1, len(overlap)):.1f}",
    flush=True,
)
one = search_from(base, 999, loops * cpu)
print(f"one search of {loops * cpu} s: gain {base_soc - one.soc}", flush=True)
