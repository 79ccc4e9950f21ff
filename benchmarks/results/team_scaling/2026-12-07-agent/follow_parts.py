"""What a team agent pays between its LNS steps, on fixed inputs: ``BlockSearch.put_back`` after a walk, and
``BlockSearch.follow`` to a plan that others' merges changed. From a tree's root (``PYTHONPATH=.``):

    python benchmarks/results/team_scaling/2026-12-07-agent/follow_parts.py [SEEDS] [REPEATS] [MAP:K]

Random-32-32-10 k = 300 (or MAP:K) from the first plan: a search walks ``WALK`` LNS steps of 8 robots (salted
ties, as a team agent's search does); another walk of ``THEIRS`` steps from the same plan, with its equal-cost
moves put back as an answer's are, is the plan to follow (the others' merges). Milliseconds a call (best of
REPEATS, each on a fresh copy) and a checksum of the paths after both calls (the same in every tree, or the
trees differ in what they do). Not a product module.
"""

from __future__ import annotations

import copy
import random
import sys
import time
import zlib
from typing import Any

from benchmarks.lib.routing import make_task
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations

WALK = 300
THEIRS = 100


def walked(task: Any, plan: tuple[Any, ...], seed: int, steps: int = WALK) -> BlockSearch:
    inst = task.inst
    table = Reservations(task.grid.n_cells)
    ends = list(inst.starts), list(inst.goals)
    search = BlockSearch(task.grid, *ends, list(plan), table, inst.max_len, rng=random.Random(seed))
    rng = random.Random(seed)
    for _ in range(steps):
        search.try_group(rng.sample(range(len(plan)), 8), None)
    return search


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    map_name, k = (sys.argv[3] if len(sys.argv) > 3 else "random-32-32-10:300").split(":")
    task = make_task(map_name, f"{map_name}-random-1", int(k), 1, seed=0, exact_limit=0)
    plan = tuple(task.initial_state().paths)
    crc, put_ms, follow_ms, moved = 0, [], [], []
    for seed in range(seeds):
        mine = walked(task, plan, 2 * seed + 1)
        theirs = walked(task, plan, 2 * seed + 2, THEIRS)
        theirs.put_back(plan)
        now = [q if p == q else p for p, q in zip(theirs.paths, plan, strict=True)]
        moved.append(sum(p is not q for p, q in zip(now, plan, strict=True)))
        best_put = best_follow = float("inf")
        for _ in range(repeats):
            a = copy.deepcopy(mine)
            t0 = time.perf_counter()
            a.put_back(plan)
            best_put = min(best_put, time.perf_counter() - t0)
            b = copy.deepcopy(mine)
            t0 = time.perf_counter()
            b.follow(plan, now)
            best_follow = min(best_follow, time.perf_counter() - t0)
        for p in (*a.paths, *b.paths):
            crc = zlib.crc32(repr(p).encode(), crc)
        put_ms.append(round(best_put * 1e3, 2))
        follow_ms.append(round(best_follow * 1e3, 2))
    print(f"put_back ms {put_ms}  follow ms {follow_ms}  robots the others moved {moved}  checksum {crc}")


if __name__ == "__main__":
    main()
