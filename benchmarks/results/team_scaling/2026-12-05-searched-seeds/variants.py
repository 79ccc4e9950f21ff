"""Virtual replays of a variant, one line per run (random-32-32-10, k = 300), and each run's commits as JSON.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SECONDS OUTDIR SEED... ; two runs at a time.
The variant, by environment variable:
  SCALE=0.25     the coordinator's CPU booked at a quarter: what a coordinator 4x as fast would do
  SIZES=8,16     agent i re-plans SIZES[i % len] robots per LNS step (the knob ``neighbourhood``)
  OPENING=0.2    an opening lease's search seconds (``tasks/routing/opening.py`` OPENING_SECONDS)
  TAG=name       the name of the output files
"""

import json
import multiprocessing
import os
import sys

Q = {1: 7152, 2: 7127, 3: 7118}  # one agent's SOC at 120 s (BENCHMARKS, "Team scaling")


def at(commits, t):
    return next((y for x, y in reversed(commits) if x <= t), None)


def to(commits, q):
    return next((round(x, 1) for x, y in commits if y <= q), None)


def one(args):
    agents, secs, seed = args
    from benchmarks.lib import virtual_team as vt
    from tasks.routing.task import RoutingTask

    scale = float(os.environ.get("SCALE", "1"))
    sizes = [int(s) for s in os.environ.get("SIZES", "").split(",") if s]
    finish = vt.ServerCore.finish
    def scaled(self, cpu, what):
        return finish(self, cpu * (1.0 if what == "create" else scale), what)

    vt.ServerCore.finish = scaled
    make = vt.make_proposer

    def make_sized(name, task, knobs, seed_, options):
        if sizes:
            knobs = dict(knobs) | {"neighbourhood": sizes[(seed_ % 1000) % len(sizes)]}
        return make(name, task, knobs, seed_, options)

    vt.make_proposer = make_sized
    if os.environ.get("OPENING"):
        import tasks.routing.task as routing_task

        routing_task.OPENING_SECONDS = float(os.environ["OPENING"])
    params = {"blocks": RoutingTask.team_defaults(agents, "async")["blocks"], "map": "random-32-32-10",
              "robots": 300, "seed": seed}
    r = vt.replay(vt.ReplayConfig(kind="routing", params=params, agents=agents, seconds=secs, seed=seed))
    return seed, r.commits, r.summary()["busy_fraction"], r.accepted, r.proposals, r.abandoned


if __name__ == "__main__":
    agents, secs, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    seeds = [int(s) for s in sys.argv[4:]]
    tag = os.environ.get("TAG", "variant")
    with multiprocessing.get_context("spawn").Pool(2, maxtasksperchild=1) as pool:
        for i, (seed, commits, busy, accepted, answers, nothing) in enumerate(
            pool.imap(one, [(agents, secs, s) for s in seeds])
        ):
            heads = " ".join(f"@{t}:{at(commits, t)}" for t in (3, 5, 8, 10, 15, 20, 30) if t <= secs)
            times = " ".join(f"{q}:{to(commits, q)}" for q in (7400, 7300, 7250, 7200, 7170))
            print(f"{tag} N={agents} seed={seed} busy={busy:.0%} merged={accepted} answers={answers} "
                  f"found-nothing={nothing} {heads} | to {times} Q {Q[seed]}:{to(commits, Q[seed])}",
                  flush=True)
            with open(os.path.join(out, f"commits-{tag}-n{agents}-s{seed}-{i}.json"), "w") as f:
                json.dump(commits, f)
