"""What the LNS pays per path for its occupancy index (``OccupancyIndex.remove`` + ``add`` of one robot's
path in a full plan), and what the coordinator pays per merge for a copy of it (``RoutingTask.apply``),
several git refs side by side in one run.

Each ref is a ``git archive`` in a temporary directory, imported by its own process. Per ref and instance:
the first plan of the map's ``random-1`` scenario (k robots), ``--ops``/100 copies of its index, then
``--ops`` random robots taken out and put back. The copies come first: ``apply`` copies an index built or
copied just before, and a dict that went through thousands of deletions copies up to twice as slowly. The
best of ``--repeats`` passes, as microseconds per remove + add and per copy. The refs run in turn per
repeat pass, so a change of machine load hits them alike; read the ratios, not the absolute times.

    .venv/bin/python benchmarks/routing_index_speed.py --refs c8ac401 HEAD --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def measure(tree: str, map_name: str, k: int, ops: int) -> dict[str, Any]:
    """One pass importing ``tree``: microseconds per remove + add, and the mean path length."""
    sys.path.insert(0, tree)
    from benchmarks.routing_common import make_task
    from tasks.routing.occupancy import OccupancyIndex

    task = make_task(map_name, f"{map_name}-random-1", k, 1, seed=0, exact_limit=0)
    paths = dict(enumerate(task.initial_state().paths))
    index = OccupancyIndex.build(task.grid.n_cells, paths)
    copies = max(1, ops // 100)
    t0 = time.perf_counter()
    for _ in range(copies):  # before the churn below (see the docstring)
        index.copy()
    copy_seconds = (time.perf_counter() - t0) / copies
    rng = random.Random(0)
    robots = [rng.randrange(k) for _ in range(ops)]
    t0 = time.perf_counter()
    for r in robots:
        index.remove(r, paths[r])
        index.add(r, paths[r])
    seconds = time.perf_counter() - t0
    mean_len = sum(len(p) for p in paths.values()) / k
    return {"us_per_remove_add": round(seconds / ops * 1e6, 2), "us_per_copy": round(copy_seconds * 1e6, 1),
            "mean_path_len": round(mean_len, 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", nargs="+", default=["HEAD"], help="git refs of this repository")
    ap.add_argument("--only", nargs="+", default=["warehouse-10-20-10-2-1:200", "random-32-32-10:300"])
    ap.add_argument("--ops", type=int, default=2000, help="paths taken out and put back per pass")
    ap.add_argument("--repeats", type=int, default=5, help="passes per ref and instance (the best is kept)")
    ap.add_argument("--json", default=None, help="write the raw rows here")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        tree, map_name, k, ops = args.worker
        print(json.dumps(measure(tree, map_name, int(k), int(ops))))
        return 0
    if args.ops < 1 or args.repeats < 1:
        print("routing_index_speed: --ops and --repeats want a positive count", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))  # (only now: a worker imports its own tree's benchmarks package)
    from benchmarks.refs import exported, instances

    rows: list[dict[str, Any]] = []
    todo = instances(args.only, "routing_index_speed")
    with exported(args.refs, "routing_index_speed") as trees:
        for map_name, k in todo:
            passes: dict[str, list[dict[str, Any]]] = {ref: [] for ref in args.refs}
            for _ in range(args.repeats):
                for ref in args.refs:
                    cmd = [sys.executable, __file__, "--worker", trees[ref], map_name, k, str(args.ops)]
                    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
                    passes[ref].append(json.loads(out.stdout.splitlines()[-1]))
            first = min(p["us_per_remove_add"] for p in passes[args.refs[0]])
            for ref in args.refs:
                best = min(p["us_per_remove_add"] for p in passes[ref])
                row = {"ref": ref, "instance": f"{map_name} k={k}", "us_per_remove_add": best,
                       "us_per_copy": min(p["us_per_copy"] for p in passes[ref]),
                       "mean_path_len": passes[ref][0]["mean_path_len"],
                       f"ratio_to_{args.refs[0]}": round(best / first, 3),
                       "passes": [p["us_per_remove_add"] for p in passes[ref]]}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        raw = {"ops": args.ops, "repeats": args.repeats, "refs": args.refs, "rows": rows}
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
