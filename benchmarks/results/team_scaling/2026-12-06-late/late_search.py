"""How much one core finds late in a run, by lease shape, with nobody else merging: from one plan at a
sum of costs near the team's 10 s head, leases are formed, searched and applied one after another, and the
sum of costs is logged against the CPU spent (contract, search and apply, as an agent and the coordinator
would spend it, on one core).

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS SEED START CPU_SECONDS SHAPE...
START: a sum of costs (one agent's leases bring the first plan there) or a file of stall_state.py's.
SHAPE: whole (one agent's lease: every robot, no early answer), share (a team's late lease: a fifth of the
robots drawn by delay, answered once gained), share-full (the same robots, searched to the budget),
whole-K (every robot, K robots re-planned per LNS step instead of 8)."""

import json
import os
import random
import sys
import time

from lab import routing_config

from tasks.registry import create_task
from tasks.routing.lease import form_overlapping_lease

seed, start_arg, cpu_limit = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
shapes = sys.argv[4:]
config = routing_config(16, seed, 0)


def new_task():
    return create_task("routing", dict(config.params))


def step(task, state, proposer, block, members, early):
    """One lease of ``members`` to ``block``, searched and applied: the new state and whether it gained."""
    blocks = list(state.blocks)
    blocks[block] = tuple(sorted(members))
    leased = task.state_of(state.paths, tuple(blocks))
    data = dict(task.contract(leased, block))
    if not early:
        data.pop("answer_on_gain", None)
    data.pop("search_seconds", None)
    draft = proposer.propose({"block": block, "version": 0, "budget": {}, "data": data})
    if draft is None:
        return leased, False
    value = task.validate(block, draft.value)
    after = task.apply(leased, {block: value})
    return after, task.objective(after) < task.objective(leased)


def late_state(task):
    """One agent's whole-plan leases from the first plan until the sum of costs is at most START, or the
    plan saved in START."""
    state = task.initial_state()
    if start_arg.endswith(".json"):
        paths = tuple(tuple(p) for p in json.load(open(start_arg))["paths"])
        return task.state_of(paths, state.blocks)
    start_soc = float(start_arg)
    proposer = task.make_proposer(task.ProposerParams(), seed)
    everyone = range(len(state.paths))
    while task.objective(state) > start_soc:
        state, _ = step(task, state, proposer, 0, everyone, early=False)
    return state


task = new_task()
start = late_state(task)
print(f"seed {seed}: start {task.objective(start):.0f}", flush=True)
out = {}
for shape in shapes:
    task = new_task()
    state = task.state_of(start.paths, start.blocks)
    size = int(shape.split("-")[1]) if shape.startswith("whole-") else 8
    proposer = task.make_proposer(task.ProposerParams(neighbourhood=size), seed + 100)
    rng = random.Random(seed)
    n = len(state.paths)
    k = n if shape.startswith("whole") else task.lease_robots
    t0 = time.thread_time()
    curve, leases, gained = [(0.0, task.objective(state))], 0, 0
    while time.thread_time() - t0 < cpu_limit:
        if k >= n:
            members = range(n)
        else:
            formed = form_overlapping_lease(task, state, 1, k, rng.randrange(1 << 30))
            members = (formed or state).blocks[1]
        state, won = step(task, state, proposer, 1 if k < n else 0, members, early=shape == "share")
        leases += 1
        gained += won
        curve.append((round(time.thread_time() - t0, 2), task.objective(state)))
    out[shape] = {"leases": leases, "gained": gained, "curve": curve}
    marks = [next((y for x, y in reversed(curve) if x <= t), None) for t in (5, 10, 20, 30, 60)]
    print(f"seed {seed} {shape:10s} k={k}: leases {leases}, gained {gained}; at 5/10/20/30/60 s CPU {marks}",
          flush=True)
json.dump({"seed": seed, "start": task.objective(start), "shapes": out},
          open(f"late-search-s{seed}{os.environ.get('TAG', '')}.json", "w"))
