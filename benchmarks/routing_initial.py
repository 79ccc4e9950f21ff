"""Ablation of routing's first plan: every robot on its shortest path vs prioritized planning with repair.

Same instances, same team (3 agents in-process, 6 blocks, 30 s, ``run_team``), the two values of the
``initial`` parameter back to back per instance.

    .venv/bin/python benchmarks/routing_initial.py --json benchmarks/results/routing_initial_ablation.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import make_task, run_team  # noqa: E402

CASES = [("random-32-32-10", 50), ("random-32-32-10", 100), ("random-32-32-10", 200)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--only", nargs="*", metavar="MAP:K", help="instances, e.g. warehouse-10-20-10-2-1:400")
    ap.add_argument(
        "--starts", nargs="*", default=["shortest", "prioritized"], choices=["shortest", "prioritized"]
    )
    ap.add_argument("--seeds", type=int, default=1, help="runs per instance and start (seeds 0..N-1)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    try:
        cases = [(s.split(":")[0], int(s.split(":")[1])) for s in args.only] if args.only else CASES
    except (IndexError, ValueError):
        print(f"routing_initial: error: --only wants MAP:K, got {args.only}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for m, k in cases:
        for init, seed in ((i, s) for i in args.starts for s in range(args.seeds)):
            task = make_task(m, f"{m}-random-1", k, 2 * args.agents, initial=init, seed=seed)
            r = run_team(task, args.agents, time_limit=args.limit, seed=seed)
            row = {
                "instance": f"{m} k={k}",
                "initial": init,
                "seed": seed,
                "load": round(os.getloadavg()[0], 2),
                "when": time.strftime("%H:%M:%S UTC", time.gmtime()),
                "valid": r.feasible,
                "soc": r.soc,
                "lb": r.lower_bound,
                "ratio": round(r.soc / r.lower_bound, 4),
                "rounds": r.rounds,
                "first_feasible_s": None if r.first_feasible_s is None else round(r.first_feasible_s, 1),
                "conflicts": r.verdict.conflicts if r.verdict else None,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        meta = {"agents": args.agents, "limit": args.limit, "blocks": 2 * args.agents, "harness": "run_team"}
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
