"""The one space-time A* against the two it replaced, side by side on the same calls.

Before the unification, ``astar.plan_path`` (fewest conflicts, then earliest arrival) and
``repair.penalized_path`` (arrival + penalty x conflicts) were two copies of one search loop. This runs
the same single-robot calls (a random robot re-planned against every other robot on its own shortest
path, the dense state a team starts from) in two source trees: this one, and a baseline tree exported
with ``git archive`` from ``--baseline-ref``. Each tree runs in its own process, alternating, ``--reps``
times; per tree and priority it prints the best total time over the reps and whether every call found
a path of the same cost.

    .venv/bin/python benchmarks/routing_astar.py --baseline-ref c3096f8 \
        --json benchmarks/results/routing_astar.json
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("random-32-32-10", 200, 20),
    ("warehouse-10-20-10-2-1", 100, 20),
    ("warehouse-10-20-10-2-1", 400, 10),
]
PENALTY = 4


def worker(tree: str, map_name: str, k: int, calls: int, seed: int) -> dict[str, Any]:
    """Time both priorities on ``calls`` re-plans, importing the search from ``tree``."""
    import random

    sys.path.insert(0, tree)
    from benchmarks.routing_common import make_task
    from tasks.routing import astar
    from tasks.routing.reservations import Reservations

    if "penalty" in inspect.signature(astar.plan_path).parameters:

        def soft(g: Any, s: int, t: int, table: Any, max_len: int, deadline: None) -> Any:
            return astar.plan_path(g, s, t, table, max_len, deadline, 10**7, PENALTY)
    else:  # the tree before the unification
        from tasks.routing.repair import penalized_path  # type: ignore[attr-defined]

        def soft(g: Any, s: int, t: int, table: Any, max_len: int, deadline: None) -> Any:
            return penalized_path(g, s, t, table, max_len, deadline, PENALTY, 10**7)

    task = make_task(map_name, f"{map_name}-random-1", k, 1, exact_limit=0, initial="shortest")
    g, inst = task.grid, task.inst
    paths = list(task.initial_state().paths)
    rng = random.Random(seed)
    out: dict[str, Any] = {"lexicographic_s": 0.0, "penalized_s": 0.0, "lexicographic": [], "penalized": []}
    for _ in range(calls):
        i = rng.randrange(len(paths))
        table = Reservations(g.n_cells)
        for j, p in enumerate(paths):
            if j != i:
                table.add_path(p)
        g.distances(inst.goals[i])  # the BFS heuristic is cached: not timed
        args = (g, inst.starts[i], inst.goals[i], table, inst.max_len, None)
        t0 = time.perf_counter()
        a = astar.plan_path(*args, 10**7)
        out["lexicographic_s"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        b = soft(*args)
        out["penalized_s"] += time.perf_counter() - t0
        out["lexicographic"].append(None if a is None else [a[1], len(a[0]) - 1])
        out["penalized"].append(None if b is None else [b[1], len(b[0]) - 1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-ref", default="c3096f8", help="git ref of the tree before the unification")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--worker", nargs=5, metavar=("TREE", "MAP", "K", "CALLS", "SEED"), help=argparse.SUPPRESS
    )
    args = ap.parse_args(argv)
    if args.worker:
        tree, m, k, calls, seed = args.worker
        print(json.dumps(worker(tree, m, int(k), int(calls), int(seed))))
        return 0
    with tempfile.TemporaryDirectory() as base:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline_ref], capture_output=True)
        if archive.returncode != 0:
            print(
                f"routing_astar: cannot export {args.baseline_ref}: {archive.stderr.decode()}",
                file=sys.stderr,
            )
            return 2
        subprocess.run(["tar", "-x", "-C", base], input=archive.stdout, check=True)
        trees = {"baseline": base, "unified": str(ROOT)}
        rows = []
        for m, k, calls in CASES:
            best: dict[str, dict[str, Any]] = {}
            for _ in range(args.reps):
                for name, tree in trees.items():
                    cmd = [sys.executable, __file__, "--worker", tree, m, str(k), str(calls), str(args.seed)]
                    env = {**os.environ, "PYTHONPATH": tree}
                    got = json.loads(
                        subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
                    )
                    old = best.get(name)
                    for key in ("lexicographic_s", "penalized_s"):
                        got[key] = min(got[key], old[key]) if old else got[key]
                    best[name] = got
            b, u = best["baseline"], best["unified"]
            row = {
                "instance": f"{m} k={k}",
                "calls": calls,
                **{
                    f"{t}_{key}": round(best[t][f"{key}_s"], 3)
                    for t in trees
                    for key in ("lexicographic", "penalized")
                },
                "equal_lexicographic": b["lexicographic"] == u["lexicographic"],
                "equal_penalized_cost": [None if x is None else x[1] + PENALTY * x[0] for x in b["penalized"]]
                == [None if x is None else x[1] + PENALTY * x[0] for x in u["penalized"]],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(
        "\n| instance | calls | lexicographic: before / after s | penalized: before / after s | same costs |"
    )
    print("|---|---|---|---|---|")
    for r in rows:
        same = "yes" if r["equal_lexicographic"] and r["equal_penalized_cost"] else "NO"
        print(
            f"| {r['instance']} | {r['calls']}"
            f" | {r['baseline_lexicographic']:.2f} / {r['unified_lexicographic']:.2f}"
            f" | {r['baseline_penalized']:.2f} / {r['unified_penalized']:.2f} | {same} |"
        )
    if args.json:
        meta = {
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "baseline_ref": args.baseline_ref,
            "reps": args.reps,
            "penalty": PENALTY,
            "load": os.getloadavg()[0],
        }
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
