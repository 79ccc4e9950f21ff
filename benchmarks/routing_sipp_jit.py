"""The compiled SIPP against the Python one, the same searches side by side, and whether they agree.

For each instance (the first k robots of the map's ``random-1`` scenario, planned as the task's first
plan does), ``--calls`` robots are drawn; each is re-planned against every other robot's path, as an LNS
step does, with no arrival bound or with one 0-10 steps above its current cost (the bounded searches of
an LNS step). Both searches answer every call; the
passes alternate (Python, compiled, Python, compiled) and the second of each is reported, so the
compiled kernels and the distance arrays are warm. Prints microseconds per search, the ratio, and how
many of the answers were identical (path for path).

    .venv/bin/python benchmarks/routing_sipp_jit.py --json benchmarks/results/routing_sipp_jit.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import make_task  # noqa: E402
from tasks.routing.reservations import Reservations  # noqa: E402
from tasks.routing.sipp import sipp_search, sipp_search_python  # noqa: E402

INSTANCES = ["random-32-32-10:100", "random-32-32-10:300", "room-32-32-4:100", "warehouse-10-20-10-2-1:200"]


def measure(spec: str, calls: int, seed: int) -> dict[str, Any]:
    map_name, k = spec.split(":")
    task = make_task(map_name, f"{map_name}-random-1", int(k), 1)
    grid, inst = task.grid, task.inst
    paths = list(task.initial_state().paths)
    rng = random.Random(seed)
    cases = []
    for _ in range(calls):
        i = rng.randrange(len(paths))
        table = Reservations(grid.n_cells)
        for j, p in enumerate(paths):
            if j != i:
                table.add_path(p)
        table.arrays(grid.width)
        grid.distance_array(inst.goals[i])
        extra = rng.choice([None, 0, 2, 10])
        bound = None if extra is None else len(paths[i]) - 1 + extra
        cases.append((inst.starts[i], inst.goals[i], table, bound))
    seconds: dict[str, float] = {}
    answers: dict[str, list[Any]] = {}
    for fn in (sipp_search_python, sipp_search, sipp_search_python, sipp_search):
        out = []
        t0 = time.perf_counter()
        for start, goal, table, bound in cases:
            out.append(fn(grid, start, goal, table, inst.max_len, bound=bound))
        seconds[fn.__name__] = time.perf_counter() - t0
        answers[fn.__name__] = out
    python_us = seconds["sipp_search_python"] / calls * 1e6
    compiled_us = seconds["sipp_search"] / calls * 1e6
    same = sum(a == b for a, b in zip(answers["sipp_search_python"], answers["sipp_search"], strict=True))
    found = sum(a[0] is not None for a in answers["sipp_search"])
    return {
        "instance": f"{map_name} k={k}",
        "calls": calls,
        "found": found,
        "python_us": round(python_us, 1),
        "compiled_us": round(compiled_us, 1),
        "ratio": round(python_us / compiled_us, 2),
        "identical": same,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", default=INSTANCES, metavar="MAP:K")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    print("| instance | calls | paths found | Python µs per search | compiled µs | ratio | identical |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.only:
        r = measure(spec, args.calls, args.seed)
        rows.append(r)
        print(
            f"| {r['instance']} | {r['calls']} | {r['found']} | {r['python_us']:,} | {r['compiled_us']:,} "
            f"| {r['ratio']} | {r['identical']}/{r['calls']} |",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
