"""Can parallel searches share one walk? A synchronous model of a team late in a run: from a saved plan,
each round every one of AGENTS searches (its own rng, the proposer's neighbourhoods) spends STEP_CPU seconds
of thread CPU on the head it follows; then their changes (after ``put_back``) are merged onto the head one
agent at a time, and every search follows the new head (``BlockSearch.follow``: walked robots that collide go
back). ``gain``: an agent's change is merged only when it lowers the head's sum of costs (the product today);
``sideways``: also when it keeps it equal, so the head itself walks the plateau. A change is merged whole or
not at all, and only when the head stays collision-free; ``gain-fit`` / ``sideways-fit``: its robots that
collide on the head go back to the head's paths until nothing collides (what fits is kept, as the
coordinator's rebase keeps it), and the rest is merged by the same rule. Printed per mode: the head after
every eighth of the rounds by team time (rounds x STEP_CPU), and one search alone for the same team time and
for the team's CPU.

Run from a checkout: [RUN=r] [ONE=0] PYTHONPATH=. python THIS PLAN.json AGENTS STEP_CPU ROUNDS MODE...
RUN: which rngs (run r seeds agent i with 1000 + 100 r + i); ONE=0 leaves out the one-search runs."""

import json
import os
import sys

from lab import Searcher, merge_changes, routing_config

from tasks.registry import create_task
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations

plan_file, agents, step_cpu, rounds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
modes = sys.argv[5:]
runs = int(os.environ.get("RUN", "0"))  # which rngs: run r seeds its agents 1000 + 100 r + i
task = create_task("routing", dict(routing_config(16, 2, 0).params))
grid, inst = task.grid, task.inst
starts, goals = list(inst.starts), list(inst.goals)
base = [tuple(p) for p in json.load(open(plan_file))["paths"]]


def soc(paths):
    return sum(len(p) - 1 for p in paths)


Searcher(grid, inst.max_len, starts, goals, base, 0).run(2.0)  # numba compiles SIPP on the first searches
out = {}
for mode in modes:
    head = list(base)
    team = [Searcher(grid, inst.max_len, starts, goals, base, 1000 + 100 * runs + i) for i in range(agents)]
    curve = [(0.0, soc(head))]
    merged_count = 0
    for r in range(rounds):
        changes = []
        for a in team:
            a.run(step_cpu)
            s = a.search
            s.put_back(a.on)
            changes.append({i: p for i, p in enumerate(s.paths) if p is not a.on[i] and p != a.on[i]})
        new_head, merged, _offered = merge_changes(
            BlockSearch, Reservations, grid, starts, goals, inst.max_len, head, changes, mode
        )
        merged_count += merged
        for a in team:
            a.search.follow(a.on, new_head)
            a.on = new_head
        head = new_head
        curve.append((round((r + 1) * step_cpu, 3), soc(head)))
    out[mode] = {"curve": curve, "merged": merged_count}
    print(
        f"{mode:9s} {agents} agents x {rounds} rounds of {step_cpu} s: head {soc(head)} (from {soc(base)}), "
        f"{merged_count} changes merged; by team time {curve[:: max(1, rounds // 8)]}",
        flush=True,
    )
team_time = rounds * step_cpu
for seconds in (team_time, team_time * agents) if os.environ.get("ONE", "1") == "1" else ():
    one = Searcher(grid, inst.max_len, starts, goals, base, 999)
    one.run(seconds)
    print(f"one search, {seconds:.1f} s: {one.search.soc}", flush=True)
json.dump(
    {"agents": agents, "step_cpu": step_cpu, "rounds": rounds, "modes": out},
    open(f"shared-walk-{agents}x{step_cpu}x{rounds}-{'_'.join(modes)}-run{runs}.json", "w"),
)
