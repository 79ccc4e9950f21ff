"""sqlplan (TPC-H, the 22 queries): team runs, single moves, larger scales and screening.

- ``team``: runs through the real service path (what ``blockopt run sqlplan --agents N --time-limit T
  --selection POLICY`` does: an embedded coordinator, agent worker processes over HTTP, the memory store),
  read back from the store: every round's closing time and objective and every verdict (the agent's
  predicted gain against the exact one). Time to a target, the objective at fixed times, the ablation of
  block selection, how often screening agreed with the exact cost. Runs interleave per seed, their order
  rotating, so a shared machine's load hits the policies alike. ``--summarize FILES`` only prints tables.
- ``moves``: what each kind of move is worth alone, per query (deterministic VM-step costs): SQLite's
  default, the DP's best join orders measured exactly, the best single partial or expression index.
- ``scale``: one team run at a larger scale (``blockopt run sqlplan --scale S [--screen-scale s]
  --baselines false``), condensed: default and final cost, their ratio, rounds, equivalence. Every merged
  change was measured and checked exactly on the full database, whatever the agents searched on.
- ``screen``: the proposer's candidate moves measured on the screening database and exactly on the full
  one (exact runs capped at the default): sign agreement, Kendall's tau of each query's ranking, how often
  the screen's best move is the exact best, and what its pick loses.

    .venv/bin/python -m benchmarks.sqlplan team --budgets none 7 --policies lease_order ucb1 alns \\
        --seeds 0 --limit 120 --out benchmarks/results/sqlplan_team_seed0.json
    .venv/bin/python -m benchmarks.sqlplan team --scale 1 --screen-scale 0.01 --reference-cap 1000000 \\
        --plan-cap-factor 1 --limit 600 --out benchmarks/results/sqlplan_sf1.json
    .venv/bin/python -m benchmarks.sqlplan moves --out benchmarks/results/sqlplan_moves_sf0.01.json
    .venv/bin/python -m benchmarks.sqlplan scale --scale 0.1 --screen-scale 0.01 --out OUT.json
    .venv/bin/python -m benchmarks.sqlplan screen --scale 0.1 --screen-scale 0.01 --out OUT.json
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from agents.fleet import spawn, terminate
from agents.worker import WorkerConfig
from benchmarks.lib.cli import Parser, fail, write_json
from benchmarks.lib.polling import wait_until_ended
from coordinator.api.embedded import EmbeddedServer
from coordinator.api.main import create_app
from coordinator.settings import ServiceSettings
from coordinator.store.memory import MemoryStore
from tasks.sqlplan.evaluate import Evaluator
from tasks.sqlplan.indexes import IndexSpec
from tasks.sqlplan.plan import DEFAULT_PLAN, QueryPlan
from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask

TARGETS = {"none": 3800.0, "7": 4000.0}
"""Issue 14's SF 0.01 targets per budget (MiB; 'none': no budget)."""


def run_one(a: argparse.Namespace, policy: str, seed: int, budget: str) -> dict[str, Any]:
    admin = secrets.token_urlsafe(24)
    settings = ServiceSettings(
        admin_token=SecretStr(admin), store="memory", screen_exact_checks=a.screen_exact_checks
    )
    store = MemoryStore()
    app = create_app(settings, store, CollectorRegistry())
    params: dict[str, Any] = {"scale": a.scale, "blocks": a.agents, "seed": seed, "baselines": False}
    if budget != "none":
        params["index_budget_mb"] = float(budget)
    if a.screen_scale is not None:
        params["screen_scale"] = a.screen_scale
    if a.reference_cap is not None:
        params["reference_cap"] = a.reference_cap
    if a.plan_cap_factor is not None:
        params["plan_cap_factor"] = a.plan_cap_factor
    knobs = {"proposal_seconds": a.proposal_seconds}
    started = time.time()
    load_start = os.getloadavg()
    with (
        EmbeddedServer(app) as server,
        httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {admin}"}, timeout=600.0
        ) as client,
    ):
        r = client.post(
            "/v1/tasks",
            json={
                "kind": "sqlplan",
                "params": params,
                "budgets": {"seconds": a.limit, "rounds": 100_000},
                "proposer": {"name": "heuristic", "knobs": knobs},
                "selection": {"policy": policy.split("-")[0], "every_round": policy.endswith("-every")},
            },
        )
        r.raise_for_status()
        created = r.json()
        tid = created["id"]
        base = WorkerConfig(coordinator=server.url, task=tid, join_token=created["join_token"], seed=seed)
        children = spawn(base, a.agents, a.processes or min(a.agents, os.cpu_count() or 2))
        try:
            view = wait_until_ended(client, tid)
        finally:
            terminate(children)
        report = client.get(f"/v1/tasks/{tid}/report").json()
        solution = client.get(f"/v1/tasks/{tid}/solution").json()["solution"]
        spec = asyncio.run(store.get_task(tid))
        entries = asyncio.run(store.rounds(tid))
        log = asyncio.run(store.proposal_log(tid))
    trajectory = [(round(e.closed_at - spec.created_at, 3), e.record.objective) for e in entries]
    verdicts = [
        {"block": v.block, "code": v.code, "predicted": v.predicted, "exact": v.delta, "screened": v.screened}
        for _, v in log
        if v is not None
    ]
    rounds = [
        {
            "round": e.record.round,
            "closed_s": round(e.closed_at - spec.created_at, 3),
            "objective": e.record.objective,
            "proposals": e.record.proposals,
            "accepted": e.record.accepted,
            "exact_checks": e.record.checks,
            "screened": e.record.screened,
            "eval_seconds": round(e.record.eval_seconds, 2),
            "screen": None if e.record.screen is None else [c.model_dump() for c in e.record.screen],
        }
        for e in entries
    ]
    return {
        "policy": policy,
        "seed": seed,
        "budget": budget,
        "scale": a.scale,
        "screen_scale": a.screen_scale,
        "status": view["status"],
        "rounds": len(entries),
        "objective": trajectory[-1][1] if trajectory else view["objective"],  # a round may close after the
        # limit's status change
        "feasible": view["feasible"],
        "all_equivalent": solution.get("all_equivalent"),
        "totals": solution.get("totals"),
        "index_bytes": solution.get("index_bytes"),
        "default_lower_bound": solution.get("default_lower_bound"),
        "per_query": solution.get("per_query"),
        "indexes": solution.get("indexes"),
        "regroups": sum(1 for e in entries if e.record.regrouped),
        "trajectory": trajectory,
        "verdicts": verdicts,
        "rounds_detail": rounds,
        "load_start": load_start,
        "load_end": os.getloadavg(),
        "selection": report.get("selection"),
        "wall_s_total": round(time.time() - started, 1),
    }


def at(trajectory: list[list[float]], t: float, start: float) -> float:
    """The committed objective at time ``t``: the last round closed by then (``start`` before any)."""
    best = start
    for when, obj in trajectory:
        if when <= t:
            best = obj
    return best


def time_to(trajectory: list[list[float]], target: float) -> float | None:
    return next((t for t, obj in trajectory if obj <= target + 1e-9), None)


def rounds_to(trajectory: list[list[float]], target: float) -> int | None:
    """Rounds to the target: less sensitive than seconds to how loaded the machine was."""
    return next((i + 1 for i, (_, obj) in enumerate(trajectory) if obj <= target + 1e-9), None)


def screening(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per scored proposal: does the exact gain agree in sign with the predicted one (screened or not)?"""
    scored = [v for r in rows for v in r["verdicts"] if v["exact"] is not None and v["predicted"] is not None]
    # (the agents' predictions; a screened round measures few proposals alone, see ``screen_agreement``)
    refused = [v for r in rows for v in r["verdicts"] if v["code"] in ("not_equivalent", "plan_failed")]
    agree = [v for v in scored if (v["exact"] > 0) == (v["predicted"] > 0)]
    ratios = [v["exact"] / v["predicted"] for v in scored if v["predicted"] > 0]
    return {
        "proposals_scored": len(scored),
        "sign_agreed": len(agree),
        "refused_by_the_exact_check": len(refused),
        "exact_over_predicted_median": statistics.median(ratios) if ratios else None,
    }


def screen_agreement(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per exactly checked combination of a screened round: did the exact gain agree in sign with the
    coordinator's screened prediction, and by what ratio?"""
    checks = [c for r in rows for d in r.get("rounds_detail", []) for c in d["screen"] or []]
    valid = [c for c in checks if c["exact"] is not None]
    agree = [c for c in valid if (c["exact"] > 0) == (c["predicted"] > 0)]
    ratios = [c["exact"] / c["predicted"] for c in valid if c["predicted"] > 0]
    return {
        "combinations_checked": len(checks),
        "refused_by_the_exact_check": len(checks) - len(valid),
        "sign_agreed": len(agree),
        "merged": sum(1 for c in checks if c["merged"]),
        "exact_over_predicted": sorted(round(x, 3) for x in ratios),
        "exact_over_predicted_median": statistics.median(ratios) if ratios else None,
    }


def summarize(rows: list[dict[str, Any]], budget: str, default: float) -> list[str]:
    target = TARGETS.get(budget)
    out = [
        f"\nbudget {budget} (target {target}): policy | reached | time to target per seed (s) | objective at"
        " 30 s / 120 s / final per seed | rounds to target | rounds | regroups"
    ]
    for policy in dict.fromkeys(r["policy"] for r in rows if r["budget"] == budget):
        rs = sorted(
            (r for r in rows if r["budget"] == budget and r["policy"] == policy), key=lambda r: r["seed"]
        )
        tt = [time_to(r["trajectory"], target) if target else None for r in rs]
        reached = [t for t in tt if t is not None]
        med = f"median {statistics.median(reached):.0f}" if reached else "-"
        objs = ", ".join(
            "/".join(
                f"{x:.0f}" for x in (at(r["trajectory"], 30, default), at(r["trajectory"], 120, default))
            )
            + f"/{r['objective']:.0f}"
            for r in rs
        )
        times = ", ".join("never" if t is None else f"{t:.0f}" for t in tt)
        rt = ", ".join(str(rounds_to(r["trajectory"], target) if target else None) for r in rs)
        out.append(
            f"{policy} | {len(reached)}/{len(rs)} | {times} ({med}) | {objs} | {rt} | "
            f"{', '.join(str(r['rounds']) for r in rs)} | {', '.join(str(r['regroups']) for r in rs)}"
        )
    return out


def report(rows: list[dict[str, Any]], budgets: list[str]) -> None:
    default = float(rows[0]["totals"]["default"]) if rows and rows[0]["totals"] else 0.0
    for budget in budgets:
        for line in summarize(rows, budget, default):
            print(line)
    print("prediction agreement (verdicts):", json.dumps(screening(rows)))
    print("screen agreement (exactly checked combinations):", json.dumps(screen_agreement(rows)))


def team(a: argparse.Namespace) -> int:
    """Team runs through the service path, read back from the store."""
    if a.summarize:
        rows = [r for f in a.summarize for r in json.loads(f.read_text())["rows"]]
        report(rows, list(dict.fromkeys(r["budget"] for r in rows)))
        return 0
    if a.out is None:
        fail("sqlplan team", "--out is required (or --summarize)")
    rows = []
    for k, seed in enumerate(a.seeds):
        for budget in a.budgets:
            order = a.policies[k % len(a.policies) :] + a.policies[: k % len(a.policies)]
            for policy in order:
                row = run_one(a, policy, seed, budget)
                rows.append(row)
                print(
                    json.dumps(
                        {x: row[x] for x in ("policy", "seed", "budget", "status", "rounds", "objective")}
                    ),
                    flush=True,
                )
                args = {k: v for k, v in vars(a).items() if k != "run"} | {"out": str(a.out)}
                write_json(a.out, {"args": args, "rows": rows})
    report(rows, a.budgets)
    return 0


def moves_alone(a: argparse.Namespace) -> int:
    """Each query's default, DP join orders and best partial or expression index, measured exactly."""
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
    write_json(a.out, rows)
    return 0


def scale(a: argparse.Namespace) -> int:
    """One ``blockopt run sqlplan`` at a larger scale, its report condensed."""
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
    write_json(a.out, out)
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
    return 0


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


def screen(a: argparse.Namespace) -> int:
    """Every candidate move measured on the screening database and exactly, side by side."""
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
    write_json(a.out, {"summary": summary, "rows": rows})
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="sqlplan", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("team", help="team runs through the service path, with their trajectories")
    t.add_argument("--scale", type=float, default=0.01)
    t.add_argument("--screen-scale", type=float, default=None)
    t.add_argument("--reference-cap", type=int, default=None)
    t.add_argument("--plan-cap-factor", type=float, default=None)
    t.add_argument("--screen-exact-checks", type=int, default=5, help="exact evaluations per screened round")
    t.add_argument("--budgets", nargs="+", default=["none"], help="'none' or MiB")
    t.add_argument("--policies", nargs="+", default=["lease_order"])
    t.add_argument("--seeds", type=int, nargs="+", default=[0])
    t.add_argument("--limit", type=float, default=120.0)
    t.add_argument("--agents", type=int, default=4)
    t.add_argument("--processes", type=int, default=None)
    t.add_argument("--proposal-seconds", type=float, default=10.0)
    t.add_argument("--out", type=Path, default=None)
    t.add_argument("--summarize", type=Path, nargs="+", default=None, help="only print the tables of these")
    t.set_defaults(run=team)
    m = sub.add_parser("moves", help="what each kind of move is worth alone, per query")
    m.add_argument("--scale", type=float, default=0.01)
    m.add_argument("--out", type=Path, default=Path("benchmarks/results/sqlplan_moves_sf0.01.json"))
    m.set_defaults(run=moves_alone)
    s = sub.add_parser("scale", help="one team run at a larger TPC-H scale")
    s.add_argument("--scale", type=float, default=0.1)
    s.add_argument("--screen-scale", type=float, default=None)
    s.add_argument("--agents", type=int, default=4)
    s.add_argument("--time-limit", type=float, default=600.0)
    s.add_argument("--index-budget-mb", type=float, default=None)
    s.add_argument("--out", type=Path, required=True)
    s.set_defaults(run=scale)
    r = sub.add_parser("screen", help="moves on the screening database against their exact cost")
    r.add_argument("--scale", type=float, default=0.1)
    r.add_argument("--screen-scale", type=float, default=0.01)
    r.add_argument("--per-query", type=int, default=6, help="index candidates per query")
    r.add_argument("--exact-cap", type=int, default=100_000, help="cap of an exact run (x 1,000 steps)")
    r.add_argument("--out", type=Path, default=Path("benchmarks/results/sqlplan_screen.json"))
    r.set_defaults(run=screen)
    a = ap.parse_args(argv)
    if a.scale <= 0 or (getattr(a, "screen_scale", None) or 1) <= 0:
        ap.error("--scale and --screen-scale want a positive scale factor")
    if min(getattr(a, "agents", 1), getattr(a, "per_query", 1)) < 1:
        ap.error("--agents and --per-query want a positive count")
    return int(a.run(a))


if __name__ == "__main__":
    sys.exit(main())
