"""The prioritized first plan by planning order: scenario order, shortest trips first, longest first.

Per instance (first k robots of scenario random-1) and order: SOC / LB, collisions left and seconds of
``repair.prioritized`` (soft: SIPP, else the collision-penalized A*).

    .venv/bin/python benchmarks/routing_order.py --json benchmarks/results/routing_order.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import make_task  # noqa: E402
from tasks.routing.repair import prioritized  # noqa: E402

CASES = [
    ("random-32-32-10", 100),
    ("random-32-32-10", 200),
    ("warehouse-10-20-10-2-1", 200),
    ("warehouse-10-20-10-2-1", 400),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for m, k in CASES:
        task = make_task(m, f"{m}-random-1", k, 3, initial="shortest")
        g, inst = task.grid, task.inst
        d = [g.distances(t)[s] for s, t in zip(inst.starts, inst.goals, strict=True)]
        orders = {
            "scenario": list(range(k)),
            "shortest_first": sorted(range(k), key=lambda r: (d[r], r)),
            "longest_first": sorted(range(k), key=lambda r: (-d[r], r)),
        }
        for name, order in orders.items():
            t0 = time.perf_counter()
            paths = prioritized(g, inst.starts, inst.goals, inst.max_len, soft=True, order=order)
            seconds = time.perf_counter() - t0
            assert paths is not None
            state = task.state_of(tuple(paths))
            row = {
                "instance": f"{m} k={k}",
                "order": name,
                "ratio": round(state.soc / task.lower_bound(), 4),
                "collisions": state.conflicts,
                "seconds": round(seconds, 2),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
