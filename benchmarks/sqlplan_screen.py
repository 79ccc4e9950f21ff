"""sqlplan screening: how often a move's cost on a smaller TPC-H database agrees with its exact cost.

For every query, the proposer's candidate moves (single index additions under SQLite's own plan, and
the DP's join orders without indexes) are measured twice, side by side in one run: on the screening
database (``--screen-scale``, what agents search on) and exactly on the full one (``--scale``, what the
coordinator merges on; runs capped at the query's default cost, so a move that is worse stops early).
Reports the sign agreement (does the move improve the query?), Kendall's tau between the two
rankings of each query's moves, how often the screen's best move is the exact best, and what the
screen's pick loses against the exact best; plus the seconds each side took.

    .venv/bin/python benchmarks/sqlplan_screen.py --scale 0.1 --screen-scale 0.01 \\
        --out benchmarks/results/sqlplan_screen_sf0.1.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

from tasks.sqlplan.evaluate import Evaluator
from tasks.sqlplan.indexes import IndexSpec
from tasks.sqlplan.plan import DEFAULT_PLAN, QueryPlan
from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask


def kendall_tau(a: list[float], b: list[float]) -> float | None:
    """Tau-a over pairs that neither side ties; None when no pair is ordered by both."""
    conc = disc = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        s = (a[i] - a[j]) * (b[i] - b[j])
        if s > 0:
            conc += 1
        elif s < 0:
            disc += 1
    return None if conc + disc == 0 else (conc - disc) / (conc + disc)


def moves(task: SqlPlanTask, q: str, per_query: int) -> list[tuple[str, QueryPlan, frozenset[IndexSpec]]]:
    proposer = task.make_proposer(task.ProposerParams(use_expert=False))
    out: list[tuple[str, QueryPlan, frozenset[IndexSpec]]] = []
    for c in proposer.candidates(q)[:per_query]:
        out.append((f"index {c.label()}", DEFAULT_PLAN, frozenset([c])))
    for scope in task.ev.models[q].scopes:
        if scope.reorderable:
            for order in (proposer._dp_orders(q, scope, frozenset()) or [])[:3]:
                out.append(
                    (f"order {scope.id}: {','.join(order)}", QueryPlan(((scope.id, order),), ()), frozenset())
                )
    return out


def measure(
    ev: Evaluator, q: str, plan: QueryPlan, idx: frozenset[IndexSpec], cap: int
) -> tuple[float, bool]:
    o = ev.measure(q, plan, idx, cap=cap)
    return float(o.cost), o.ok


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--screen-scale", type=float, default=0.01)
    ap.add_argument("--per-query", type=int, default=6, help="index candidates per query")
    ap.add_argument(
        "--exact-cap",
        type=int,
        default=100_000,
        help="cap of an exact run (x 1,000 steps); above it: unknown",
    )
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/sqlplan_screen.json"))
    a = ap.parse_args()
    task = SqlPlanTask(SqlPlanParams(scale=a.scale, screen_scale=a.screen_scale, baselines=False, blocks=4))
    task.make_proposer(task.ProposerParams(use_expert=False))
    screen = task._screen
    assert screen is not None
    rows: list[dict[str, Any]] = []
    secs = {"screen": 0.0, "exact": 0.0}
    for q in task.qids:
        for label, plan, idx in moves(task, q, a.per_query):
            d_s, d_e = screen.default_cost[q], task.ev.default_cost[q]
            t0 = time.perf_counter()
            c_s, ok_s = measure(screen, q, plan, idx, 4 * d_s + 1000)
            t1 = time.perf_counter()
            # a worse move stops at the default's cost; past --exact-cap the exact cost is unknown
            c_e, ok_e = measure(task.ev, q, plan, idx, min(d_e, a.exact_cap))
            t2 = time.perf_counter()
            secs["screen"] += t1 - t0
            secs["exact"] += t2 - t1
            rows.append(
                {
                    "query": q,
                    "move": label,
                    "screen_cost": c_s,
                    "screen_default": d_s,
                    "screen_improves": ok_s and c_s < d_s,
                    "exact_cost": c_e,
                    "exact_default": d_e,
                    "exact_improves": ok_e and c_e < d_e,
                    "exact_known": ok_e or d_e <= a.exact_cap,
                }
            )
        print(q, sum(1 for r in rows if r["query"] == q), "moves", flush=True)
    known = [r for r in rows if r["exact_known"]]
    agree = sum(1 for r in known if r["screen_improves"] == r["exact_improves"])
    taus, best_hits, regrets = [], 0, []
    for q in task.qids:
        rs = [r for r in known if r["query"] == q]
        if len(rs) < 2:
            continue
        tau = kendall_tau(
            [r["screen_cost"] for r in rs], [min(r["exact_cost"], r["exact_default"]) for r in rs]
        )
        if tau is not None:
            taus.append(tau)
        pick = min(rs, key=lambda r: r["screen_cost"])
        best = min(rs, key=lambda r: r["exact_cost"])
        best_hits += pick["exact_cost"] == best["exact_cost"]
        regrets.append(
            (min(pick["exact_cost"], pick["exact_default"]) - best["exact_cost"])
            / max(1.0, best["exact_default"])
        )
    tp = sum(1 for r in known if r["screen_improves"] and r["exact_improves"])
    summary = {
        "scale": a.scale,
        "screen_scale": a.screen_scale,
        "moves": len(rows),
        "moves_exact_known": len(known),
        "sign_agreement": agree / max(1, len(known)),
        "screen_says_improves": sum(1 for r in known if r["screen_improves"]),
        "exact_improves": sum(1 for r in known if r["exact_improves"]),
        "both_improve": tp,
        "kendall_tau_mean": sum(taus) / max(1, len(taus)),
        "kendall_tau_queries": len(taus),
        "screen_best_is_exact_best": best_hits,
        "queries": len(regrets),
        "mean_regret_of_screen_pick_vs_default": sum(regrets) / max(1, len(regrets)),
        "seconds": secs,
    }
    print(json.dumps(summary, indent=1))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
