"""SIPP against space-time A* on the same single-robot replanning calls, in one run.

For each instance, the plan is every robot's own shortest path (the dense first state a team starts
from); a random robot is taken out and replanned against all the others, once by space-time A*
(``astar.plan_path``) and once by SIPP (``sipp.sipp_path``). Prints both times, their ratio, and how
often the two found a conflict-free path of the same cost.

    .venv/bin/python benchmarks/routing_sipp.py --json benchmarks/results/routing_sipp.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import make_task  # noqa: E402
from tasks.routing.astar import plan_path  # noqa: E402
from tasks.routing.occupancy import cost  # noqa: E402
from tasks.routing.reservations import Reservations  # noqa: E402
from tasks.routing.sipp import sipp_path  # noqa: E402

CASES = [
    ("random-32-32-10", 200, 20),
    ("warehouse-10-20-10-2-1", 100, 20),
    ("warehouse-10-20-10-2-1", 400, 10),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = []
    for map_name, k, calls in CASES:
        task = make_task(map_name, f"{map_name}-random-1", k, 1, exact_limit=0)
        g, inst = task.grid, task.inst
        paths = list(task.initial_state().paths)
        rng = random.Random(args.seed)
        t_astar = t_sipp = 0.0
        astar_free = sipp_free = equal = 0
        for _ in range(calls):
            i = rng.randrange(len(paths))
            table = Reservations(g.n_cells)
            for j, p in enumerate(paths):
                if j != i:
                    table.add_path(p)
            g.distances(inst.goals[i])  # the BFS heuristic is shared and cached: not timed
            t0 = time.perf_counter()
            a = plan_path(g, inst.starts[i], inst.goals[i], table, inst.max_len, expansions=10**7)
            t_astar += time.perf_counter() - t0
            t0 = time.perf_counter()
            s = sipp_path(g, inst.starts[i], inst.goals[i], table, inst.max_len, expansions=10**7)
            t_sipp += time.perf_counter() - t0
            astar_free += a is not None and a[1] == 0
            sipp_free += s is not None
            equal += a is not None and a[1] == 0 and s is not None and cost(s) == cost(a[0])
        row = {
            "instance": f"{map_name} k={k}",
            "calls": calls,
            "astar_s": round(t_astar, 3),
            "sipp_s": round(t_sipp, 3),
            "speedup": round(t_astar / max(t_sipp, 1e-9), 2),
            "astar_conflict_free": astar_free,
            "sipp_conflict_free": sipp_free,
            "equal_cost": equal,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(
        "\n| instance | calls | space-time A* s | SIPP s | A* / SIPP | conflict-free (A*, SIPP) | equal cost |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['instance']} | {r['calls']} | {r['astar_s']:.2f} | {r['sipp_s']:.2f} | {r['speedup']:.2f} | "
            f"{r['astar_conflict_free']}, {r['sipp_conflict_free']} | {r['equal_cost']} |"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}, indent=1)
            + "\n"
        )


if __name__ == "__main__":
    main()
