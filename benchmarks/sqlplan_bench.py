"""SQLite query planning benchmark: SF 0.01, 4 agents, 120 s, no budget and 7 MiB, beside the baselines.

Runs ``blockopt run sqlplan`` twice (sequentially: the machine is shared) and
prints the Markdown table for BENCHMARKS.md from the two reports.

    .venv/bin/python benchmarks/sqlplan_bench.py [--out out/bench-sqlplan] [--time-limit 120]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def run(out: Path, budget: float | None, time_limit: float, agents: int) -> dict[str, Any]:
    report = out / ("nobudget.json" if budget is None else f"budget{budget:g}.json")
    cmd = [
        str(Path(sys.executable).parent / "blockopt"),
        "run",
        "sqlplan",
        "--scale",
        "0.01",
        "--agents",
        str(agents),
        "--time-limit",
        str(time_limit),
        "--quiet",
        "--report",
        str(report),
    ]
    if budget is not None:
        cmd += ["--index-budget-mb", str(budget)]
    subprocess.run(cmd, check=True)
    return json.loads(report.read_text())


def row(name: str, r: dict[str, Any]) -> str:
    sol = r.get("solution", {})
    t = sol.get("totals", {})
    b = r["constants"]
    one = r["checks"]["one_step"]
    mib = sol.get("index_bytes", 0) / 2**20
    return (
        f"| {name} | {t.get('default')} | {t.get('analyze')} | {t.get('expert_per_query', '-')} | "
        f"{t.get('expert_union', '-')} | {t.get('expert_budget', '-')} | **{t.get('final')}** ({mib:.1f} MiB) | "
        f"{r['feasible']} | {r['rounds']} | {r['wall_s']:.0f} | kappa {b['kappa']:.3g}, gamma "
        f"[{b['gamma_min']:.3g}, {b['gamma_max']:.3g}], delta {b['delta_max']:.3g}, "
        f"status {r['status']}, one-step forecast hit {one['hits']}/{one['rounds']} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("out/bench-sqlplan"))
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--results", type=Path, default=None, help="also write the compact raw JSON here")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    free = run(a.out, None, a.time_limit, a.agents)
    tight = run(a.out, 7.0, a.time_limit, a.agents)
    print(
        "| budget | default | ANALYZE | .expert per query | .expert union | .expert greedy in budget | team |"
        " feasible | rounds | s | bound |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(row("none", free))
    print(row("7 MiB", tight))
    if a.results:
        a.results.parent.mkdir(parents=True, exist_ok=True)
        a.results.write_text(json.dumps({"none": compact(free), "7MiB": compact(tight)}, indent=1))


def compact(r: dict[str, Any]) -> dict[str, Any]:
    """What BENCHMARKS.md quotes from one report: totals, per-query finals, the index set, the run."""
    sol = r.get("solution", {})
    keep = ("status", "rounds", "wall_s", "feasible", "proposals", "agents")
    return {
        **{k: r.get(k) for k in keep},
        "params": r["task"].get("params"),
        "totals": sol.get("totals"),
        "index_bytes": sol.get("index_bytes"),
        "all_equivalent": sol.get("all_equivalent"),
        "per_query": sol.get("per_query"),
        "indexes": sol.get("indexes"),
    }


if __name__ == "__main__":
    main()
