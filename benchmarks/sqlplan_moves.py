"""sqlplan: what each new kind of move is worth alone, per query (SF 0.01, deterministic costs).

For every query: SQLite's default cost; the DP's best join order measured exactly (no index), with its
model cost; and the best single partial or expression-storing index among the proposer's candidates
(SQLite's own plan), with its bytes. Costs are VM steps / 1,000, so the figures repeat exactly.

    .venv/bin/python benchmarks/sqlplan_moves.py --out benchmarks/results/sqlplan_moves_sf0.01.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tasks.sqlplan.plan import DEFAULT_PLAN, QueryPlan
from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/sqlplan_moves_sf0.01.json"))
    a = ap.parse_args()
    task = SqlPlanTask(SqlPlanParams(blocks=4, scale=a.scale, baselines=False))
    ev = task.ev
    pr = task.make_proposer(task.ProposerParams(use_expert=False))
    rows: list[dict[str, Any]] = []
    for q in task.qids:
        row: dict[str, Any] = {"query": q, "default": ev.default_cost[q]}
        for scope in ev.models[q].scopes:
            orders = pr._dp_orders(q, scope, frozenset()) if scope.reorderable else None
            if not orders:
                continue
            measured = []
            for o in orders[:3]:
                out = ev.measure(q, QueryPlan(((scope.id, o),), ()), frozenset())
                measured.append({"order": list(o), "cost": out.cost if out.ok else None})
            best = min((m for m in measured if m["cost"] is not None), key=lambda m: m["cost"], default=None)
            row.setdefault("dp_orders", []).append(
                {"scope": scope.id, "dp_first": measured[0], "best_of_3": best}
            )
        best_idx: tuple[int, Any] = (ev.default_cost[q], None)
        for c in pr.partial_candidates(q):
            out = ev.measure(q, DEFAULT_PLAN, frozenset([c]))
            if out.ok and out.cost < best_idx[0]:
                best_idx = (out.cost, c)
        if best_idx[1] is not None:
            row["best_partial_or_expression_index"] = {
                "cost": best_idx[0],
                "bytes": ev.size(best_idx[1]),
                "index": best_idx[1].label(),
            }
        rows.append(row)
        print(json.dumps(row)[:240], flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
