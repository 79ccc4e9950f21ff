"""What could a team gain with no protocol at all? A synchronous model of a whole run, from the replay
instance's first plan (random-32-32-10, 300 robots, SEED). Each round every one of AGENTS searches (its own
rng, the proposer's neighbourhoods, a step kept when the sum of costs does not grow) spends STEP_CPU seconds
of thread CPU on the head it follows; then their changes (after ``put_back``) are merged onto the head one
agent at a time and every search follows the new head (``BlockSearch.follow``). Merging, following and
put_back cost nothing on the team's clock (rounds x STEP_CPU): an upper bound on what batched merges give.
MODE as in ../2026-12-07-plateau/shared_walk.py (whose ``lab.py`` this script uses): ``gain-fit`` (what
collides on the head goes back, the rest merged when it lowers the head: the coordinator's rebase),
``sideways-fit`` (merged also when it keeps the head equal, so the head itself walks). AGENTS = 1: one
search alone, its own plan read every STEP_CPU.

Writes ideal-SEED-nAGENTS-STEP_CPU-MODE-rRUN.json with the curve (team seconds, sum of costs).
Run in this folder: PYTHONPATH=<checkout> python ideal_team.py SEED AGENTS STEP_CPU SECONDS MODE [RUN]"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "2026-12-07-plateau"))
from lab import Searcher, merge_changes, routing_config, walk  # noqa: E402  (the plateau lab's walk and the k = 300 replay config)

from tasks.registry import create_task  # noqa: E402
from tasks.routing.repair import BlockSearch  # noqa: E402
from tasks.routing.reservations import Reservations  # noqa: E402

seed, agents, step_cpu, seconds, mode = (
    int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
)
run = int(sys.argv[6]) if len(sys.argv) > 6 else 0
task = create_task("routing", dict(routing_config(agents, seed, 0).params))
grid, inst = task.grid, task.inst
starts, goals = list(inst.starts), list(inst.goals)
first = [tuple(p) for p in task.initial_state().paths]


def soc(paths):
    return sum(len(p) - 1 for p in paths)


warm = Searcher(grid, inst.max_len, starts, goals, first, 0)  # numba compiles SIPP on the first searches
walk(warm.search, warm.proposer, 1.0)
rounds = round(seconds / step_cpu)
team = [Searcher(grid, inst.max_len, starts, goals, first, 1000 + 100 * run + i) for i in range(agents)]
head = list(first)
curve = [(0.0, soc(head))]
merged = offered = 0
wall = time.perf_counter()
for r in range(rounds):
    if agents == 1:
        walk(team[0].search, team[0].proposer, step_cpu)
        curve.append((round((r + 1) * step_cpu, 3), team[0].search.soc))
        continue
    changes = []
    for a in team:
        walk(a.search, a.proposer, step_cpu)
        a.search.put_back(a.on)
        changes.append({i: p for i, p in enumerate(a.search.paths) if p is not a.on[i] and p != a.on[i]})
    new_head, merged_now, offered_now = merge_changes(
        BlockSearch, Reservations, grid, starts, goals, inst.max_len, head, changes, mode
    )
    merged, offered = merged + merged_now, offered + offered_now
    for a in team:
        a.search.follow(a.on, new_head)
        a.on = new_head
    head = new_head
    curve.append((round((r + 1) * step_cpu, 3), soc(head)))
    if (r + 1) % max(1, round(1 / step_cpu)) == 0:
        print(f"{curve[-1][0]:6.1f} s  head {curve[-1][1]}  merged {merged} of {offered}"
              f"  wall {time.perf_counter() - wall:.0f} s", flush=True)
print(f"seed {seed} agents {agents} step {step_cpu} {mode} run {run}: {curve[0][1]} -> {curve[-1][1]}"
      f" in {seconds} s; merged {merged} of {offered}", flush=True)
name = f"ideal-{seed}-n{agents}-{step_cpu}-{mode}-r{run}.json"
json.dump({"seed": seed, "agents": agents, "step_cpu": step_cpu, "mode": mode, "run": run,
           "merged": merged, "offered": offered, "curve": curve}, open(name, "w"))
