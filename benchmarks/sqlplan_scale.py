"""sqlplan at a larger TPC-H scale: one team run, optionally screening on a smaller database.

Runs ``blockopt run sqlplan --scale S [--screen-scale s] --agents N --time-limit T --baselines false``
(the service path: embedded coordinator + agent processes), and writes a compact JSON: SQLite's default
workload cost, the team's final cost, their ratio, rounds, status, and whether every result is
equivalent. Every merged change was measured and checked exactly on the full database by the
coordinator, whatever the agents searched on.

    .venv/bin/python benchmarks/sqlplan_scale.py --scale 0.1 --screen-scale 0.01 --time-limit 600 \\
        --out benchmarks/results/sqlplan_sf0.1_screen.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--screen-scale", type=float, default=None)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--index-budget-mb", type=float, default=None)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    report = Path("out") / f"{a.out.stem}-report.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(Path(sys.executable).parent / "blockopt"),
        "run",
        "sqlplan",
        "--scale",
        f"{a.scale:g}",
        "--agents",
        str(a.agents),
        "--time-limit",
        str(a.time_limit),
        "--baselines",
        "false",
        "--quiet",
        "--report",
        str(report),
    ]
    if a.screen_scale is not None:
        cmd += ["--screen-scale", f"{a.screen_scale:g}"]
    if a.index_budget_mb is not None:
        cmd += ["--index-budget-mb", str(a.index_budget_mb)]
    t0 = time.time()
    subprocess.run(cmd, check=True)
    r = json.loads(report.read_text())
    sol = r["solution"]
    default, final = sol["totals"]["default"], sol["totals"]["final"]
    out = {
        "command": " ".join(cmd[1:]),
        "wall_s_total": time.time() - t0,
        "default": default,
        "final": final,
        "ratio_default_over_final": default / max(1, final),
        "all_equivalent": sol.get("all_equivalent"),
        "feasible": r.get("feasible"),
        "index_bytes": sol.get("index_bytes"),
        "status": r.get("status"),
        "rounds": r.get("rounds"),
        "wall_s": r.get("wall_s"),
        "proposals": r.get("proposals"),
        "history": [{k: h[k] for k in ("round", "objective", "merged", "proposals")} for h in r["history"]],
        "per_query": sol.get("per_query"),
        "indexes": sol.get("indexes"),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1))
    print(
        json.dumps(
            {
                k: out[k]
                for k in (
                    "default",
                    "final",
                    "ratio_default_over_final",
                    "all_equivalent",
                    "status",
                    "rounds",
                    "wall_s",
                )
            }
        )
    )


if __name__ == "__main__":
    main()
