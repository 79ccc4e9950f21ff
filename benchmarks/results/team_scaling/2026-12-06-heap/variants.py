"""Virtual replays of a variant, one line per run (random-32-32-10, k = 300), and each run's commits as JSON.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SECONDS OUTDIR SEED...
The variant, by environment variable (the last session's variants.py, and two more):
  DRAWN=1        the proposer's walks start from a delayed robot drawn by its delay, not the most delayed
  EXCLUSIVE=1    opening leases are exclusive shares of the free robots (form_routing_lease), not the plan
  SCALE=0.25     the coordinator's CPU booked at a quarter: what a coordinator 4x as fast would do
  OPENING=0.2    an opening lease's search seconds (``tasks/routing/opening.py`` OPENING_SECONDS)
  JOBS=2         runs at a time
  TAG=name       the name of the output files
"""

import json
import multiprocessing
import os
import sys

from lab import Q, at, routing_config, to


def scale_coordinator(vt, scale):
    finish = vt.ServerCore.finish

    def scaled(self, cpu, what):
        return finish(self, cpu * (1.0 if what == "create" else scale), what)

    vt.ServerCore.finish = scaled


def drawn_walks():
    from tasks.routing import destroy as rd

    def walk_drawn(grid, paths, starts, goals, k, rng, tabu, index, spares=(1, 0)):
        d = rd.delays(grid, paths, starts, goals)
        delayed = [i for i in range(len(paths)) if d[i] > 0]
        candidates = [i for i in delayed if i not in tabu]
        if not candidates:
            tabu.clear()
            candidates = delayed
        if not candidates:
            return []
        pick = rng.choices(candidates, weights=[d[i] for i in candidates])[0]
        tabu.add(pick)
        return rd.walk_from(grid, paths[pick], goals[pick], [pick], k, rng, index, spares)

    name = next(n for n, f in rd.GENERATORS.items() if f is rd.random_walk_from_delayed)
    rd.GENERATORS[name] = walk_drawn


def exclusive_opening():
    from tasks.routing import lease as rl
    from tasks.routing import task as rt
    from tasks.routing.contract import build_contract

    overlapping = rt.RoutingTask.form_lease

    def form_lease(self, state, block, held, attempt):
        opening = self._opening
        if opening is not None and opening.open:
            opening.leased(block)
            if opening.open:
                return rl.form_routing_lease(self, state, block, held, attempt)
        return overlapping(self, state, block, held, attempt)

    def contract(self, state, block):
        opening = self._opening is not None and self._opening.open
        extra = {"search_seconds": rt.OPENING_SECONDS} if opening else None
        return build_contract(
            self.inst,
            state.paths,
            state.blocks[block],
            self.p.margin,
            self.weight,
            self._geometry,
            extra=extra,
        )

    rt.RoutingTask.form_lease = form_lease
    rt.RoutingTask.contract = contract


def one(args):
    agents, secs, seed = args
    from benchmarks.lib import virtual_team as vt

    scale_coordinator(vt, float(os.environ.get("SCALE", "1")))
    if os.environ.get("DRAWN"):
        drawn_walks()
    if os.environ.get("EXCLUSIVE"):
        exclusive_opening()
    if os.environ.get("OPENING"):
        import tasks.routing.task as routing_task

        routing_task.OPENING_SECONDS = float(os.environ["OPENING"])
    r = vt.replay(routing_config(agents, seed, secs))
    return seed, r.commits, r.summary()["busy_fraction"], r.accepted, r.proposals, r.abandoned


if __name__ == "__main__":
    agents, secs, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    seeds = [int(s) for s in sys.argv[4:]]
    tag = os.environ.get("TAG", "variant")
    jobs = int(os.environ.get("JOBS", "2"))
    with multiprocessing.get_context("spawn").Pool(jobs, maxtasksperchild=1) as pool:
        for i, (seed, commits, busy, accepted, answers, nothing) in enumerate(
            pool.imap(one, [(agents, secs, s) for s in seeds])
        ):
            heads = " ".join(f"@{t}:{at(commits, t)}" for t in (3, 5, 8, 10, 15, 20, 30) if t <= secs)
            times = " ".join(f"{q}:{to(commits, q)}" for q in (7400, 7300, 7250, 7200, 7170))
            print(
                f"{tag} N={agents} seed={seed} busy={busy:.0%} merged={accepted} answers={answers} "
                f"found-nothing={nothing} {heads} | to {times} Q {Q[seed]}:{to(commits, Q[seed])}",
                flush=True,
            )
            with open(os.path.join(out, f"commits-{tag}-n{agents}-s{seed}-{i}.json"), "w") as f:
                json.dump(commits, f)
