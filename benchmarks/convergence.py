"""Convergence claims that can fail, measured (issue 10, docs/architecture.md §5).

Quadratic sweep (couplings × seeds × σ × merge policies, engine only): the a priori bound (rounds checked /
held / precondition failed), the one-step forecast's coverage and tightness, the out-of-sample envelope's
hit rate, and the ETA to relative gap 1e-6 predicted at step W (envelope and Aitken forecast) against the
actual number of rounds. Routing (random-32-32-10 with k = 50 and 100, room-32-32-4) and sqlplan (TPC-H
SF 0.01), engine only and short: one-step coverage, tightness, ETA and F̂∞ at step W and at mid-run
against the final value. Everything comes from one run of this script; raw rows go to
benchmarks/results/convergence.json.

    .venv/bin/python -m benchmarks.convergence                # everything (~10 min on 2 shared cores)
    .venv/bin/python -m benchmarks.convergence --seeds 2 --skip-routing --skip-sqlplan   # a quick look
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.lib.cli import Parser
from coordinator.engine import forecast as fc
from coordinator.engine.rounds import EngineSettings
from coordinator.reports.ledger import RunLedger
from coordinator.runtime.inproc import RunResult, RunSettings, run_inproc
from tasks.quadratic import QuadraticParams, QuadraticProposerParams, QuadraticTask

EPSILON = 1e-6
WINDOWS = (3, 6)


def eta_at(ledger: RunLedger, w: int) -> dict[str, Any]:
    """Rounds to relative gap ε predicted from the first w steps (envelope; Aitken forecast) and the actual."""
    objectives = [ledger.initial_objective] + [r.objective for r in ledger.records]
    ref = ledger.reference.value
    target = fc.target_gap(ref, objectives[0] - ref, EPSILON)
    env = fc.envelope_summary(ledger.steps(), w, target, ledger.tolerance)
    forecast_eta = None
    if len(objectives) > w:
        f = fc.forecast(
            objectives[: w + 1],
            ref,
            epsilon=EPSILON,
            tolerance=ledger.tolerance,
            optimum=ledger.reference.kind == "optimum",
        )
        if f.eta_rounds is not None and f.eta_target == "relative_gap":
            forecast_eta = w + f.eta_rounds
    return {
        "window": w,
        "envelope_predicted": env.eta_rounds_predicted,
        "forecast_predicted": forecast_eta,
        "actual": env.eta_rounds_actual,
        "envelope_rounds": env.rounds,
        "envelope_hits": env.hits,
        "envelope_tightness_median": env.tightness_median,
        "envelope_informative": env.informative,
    }


def limits(ledger: RunLedger) -> dict[str, Any]:
    objectives = [ledger.initial_objective] + [r.objective for r in ledger.records]
    out: dict[str, Any] = {"final": objectives[-1], "reference": ledger.reference.value}
    for name, t in (("at_w6", 6), ("at_half", len(objectives) // 2)):
        f = fc.forecast(
            objectives[: t + 1],
            ledger.reference.value,
            epsilon=EPSILON,
            tolerance=ledger.tolerance,
            optimum=ledger.reference.kind == "optimum",
        )
        out[name] = {"round": t, "limit": f.limit, "eta_rounds": f.eta_rounds, "eta_target": f.eta_target}
    return out


def row_of(result: RunResult, extra: dict[str, Any], seconds: float) -> dict[str, Any]:
    led = result.ledger
    checks = led.checks()
    one = checks["one_step"]
    return {
        **extra,
        "status": str(result.status),
        "rounds": len(led.records),
        "seconds": round(seconds, 2),
        "a_priori": None
        if checks["a_priori"] is None
        else {k: v for k, v in checks["a_priori"].items() if k != "constants"},
        "one_step": {
            "rounds": one["rounds"],
            "hits": one["hits"],
            "tightness_median": one["tightness_median"],
        },
        "eta": [eta_at(led, w) for w in WINDOWS],
        "limits": limits(led),
        "constants_informative": led.constants().informative,
        "accounting_violations": sum(r.accounting_violations for r in led.records),
    }


def quadratic_sweep(seeds: int, max_rounds: int) -> list[dict[str, Any]]:
    rows = []
    for coupling in (0.3, 0.6, 0.9):
        for seed in range(seeds):
            task = QuadraticTask(QuadraticParams(blocks=16, dim=4, coupling=coupling, seed=seed))
            for sigma in (0.0, 1e-3, 1e-1):
                for policy in ("checked", "independent"):
                    t0 = time.perf_counter()
                    result = run_inproc(
                        task,
                        QuadraticProposerParams(noise=sigma),
                        RunSettings(agents=16, max_rounds=max_rounds, seed=seed),
                        EngineSettings(merge_policy=policy),
                    )  # type: ignore[arg-type]
                    rows.append(
                        row_of(
                            result,
                            {
                                "kind": "quadratic",
                                "coupling": coupling,
                                "seed": seed,
                                "sigma": sigma,
                                "policy": policy,
                            },
                            time.perf_counter() - t0,
                        )
                    )
                    print(".", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return rows


def routing_runs(time_limit: float) -> list[dict[str, Any]]:
    from tasks.routing import RoutingTask
    from tasks.routing.instance import RoutingParams
    from tasks.routing.task import RoutingProposerParams

    rows = []
    for name, robots in (("random-32-32-10", 50), ("random-32-32-10", 100), ("room-32-32-4", 50)):
        task = RoutingTask(RoutingParams(map=name, robots=robots, blocks=4, exact_limit=0))
        t0 = time.perf_counter()
        result = run_inproc(
            task,
            RoutingProposerParams(),
            RunSettings(agents=4, max_rounds=200, time_limit=time_limit),
            EngineSettings(merge_policy="checked"),
        )
        rows.append(
            row_of(result, {"kind": "routing", "instance": f"{name}-k{robots}"}, time.perf_counter() - t0)
        )
        print(f"routing {name} k={robots}: {result.status}", file=sys.stderr, flush=True)
    return rows


def sqlplan_runs(time_limit: float) -> list[dict[str, Any]]:
    from tasks.sqlplan.task import SqlPlanParams, SqlPlanProposerParams, SqlPlanTask

    task = SqlPlanTask(SqlPlanParams(blocks=4, scale=0.01, baselines=False))
    t0 = time.perf_counter()
    result = run_inproc(
        task,
        SqlPlanProposerParams(proposal_seconds=3.0, use_expert=False),
        RunSettings(agents=4, max_rounds=100, time_limit=time_limit),
        EngineSettings(merge_policy="checked"),
    )
    print(f"sqlplan: {result.status}", file=sys.stderr, flush=True)
    return [row_of(result, {"kind": "sqlplan", "instance": "tpch-sf0.01"}, time.perf_counter() - t0)]


def within_2x(predicted: int | None, actual: int | None) -> bool:
    if actual is None or predicted is None:
        return False
    return max(predicted, 1) <= 2 * max(actual, 1) and max(actual, 1) <= 2 * max(predicted, 1)


def med(values: list[float]) -> str:
    return f"{statistics.median(values):.3g}" if values else "-"


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    quad = [r for r in rows if r["kind"] == "quadratic"]
    out: dict[str, Any] = {}
    print("\nQuadratic sweep (16 blocks x 4, 16 agents): per (sigma, policy)")
    print(
        f"{'sigma':>6s} {'policy':>11s} {'runs':>4s} | {'a priori checked':>16s} {'held':>6s} {'failed':>6s} "
        f"{'precond':>7s} | {'1-step hits':>12s} {'cover':>6s} {'tight':>6s} | {'env hits (W=3)':>14s} | "
        f"{'ETA<=2x env W3':>14s} {'fcst W6':>9s}"
    )
    for sigma in (0.0, 1e-3, 1e-1):
        for policy in ("checked", "independent"):
            sel = [r for r in quad if r["sigma"] == sigma and r["policy"] == policy]
            if not sel:
                continue
            ap = [r["a_priori"] for r in sel]
            checked = sum(a["rounds_checked"] for a in ap)
            held = sum(a["rounds_held"] for a in ap)
            pre = sum(a["rounds_precondition_failed"] for a in ap)
            hits = sum(r["one_step"]["hits"] for r in sel)
            n1 = sum(r["one_step"]["rounds"] for r in sel)
            tight = [r["one_step"]["tightness_median"] for r in sel if r["one_step"]["tightness_median"]]
            env = [e for r in sel for e in r["eta"] if e["window"] == 3]
            eh, en = sum(e["envelope_hits"] for e in env), sum(e["envelope_rounds"] for e in env)
            eta_env = sum(within_2x(e["envelope_predicted"], e["actual"]) for e in env)
            eta_fc = sum(
                within_2x(e["forecast_predicted"], e["actual"])
                for r in sel
                for e in r["eta"]
                if e["window"] == 6
            )
            print(
                f"{sigma:6g} {policy:>11s} {len(sel):4d} | {checked:16d} {held:6d} {checked - held:6d} {pre:7d} | "
                f"{hits:5d}/{n1:<6d} {hits / n1 if n1 else 0:6.1%} {med(tight):>6s} | {eh:6d}/{en:<7d} | "
                f"{eta_env:6d}/{len(env):<7d} {eta_fc:4d}/{len(sel):<4d}"
            )
    ap_all = [r["a_priori"] for r in quad]
    clean = [r for r in quad if r["sigma"] == 0.0]
    out["a_priori_sigma0"] = {
        "checked": sum(r["a_priori"]["rounds_checked"] for r in clean),
        "held": sum(r["a_priori"]["rounds_held"] for r in clean),
    }
    out["a_priori_all"] = {
        "checked": sum(a["rounds_checked"] for a in ap_all),
        "held": sum(a["rounds_held"] for a in ap_all),
    }
    n1 = sum(r["one_step"]["rounds"] for r in quad)
    out["one_step_coverage"] = sum(r["one_step"]["hits"] for r in quad) / n1 if n1 else None
    tights = [r["one_step"]["tightness_median"] for r in quad if r["one_step"]["tightness_median"]]
    out["one_step_tightness_median_of_runs"] = statistics.median(tights) if tights else None
    reached = [r for r in quad if r["eta"][0]["actual"] is not None]
    out["eta_within_2x"] = {
        f"{how}_W{w}": sum(
            within_2x(e[f"{how}_predicted"], e["actual"])
            for r in reached
            for e in r["eta"]
            if e["window"] == w
        )
        for how in ("envelope", "forecast")
        for w in WINDOWS
    }
    out["runs_reaching_eps"] = len(reached)
    out["runs"] = len(quad)
    env_fail = sum(1 for r in quad if r["eta"][0]["envelope_hits"] < r["eta"][0]["envelope_rounds"])
    out["envelope_W3_runs_with_a_miss"] = env_fail
    coverage, tight = out["one_step_coverage"], out["one_step_tightness_median_of_runs"]
    print(
        f"\nquadratic, all {len(quad)} runs: a priori held {out['a_priori_all']['held']}/"
        f"{out['a_priori_all']['checked']} checked rounds (sigma 0: {out['a_priori_sigma0']['held']}/"
        f"{out['a_priori_sigma0']['checked']}); one-step coverage "
        f"{'none (too few rounds)' if coverage is None else f'{coverage:.1%}'} (target 90%), median of per-run "
        f"median tightness {'none' if tight is None else f'{tight:.3g}'}; envelope (W=3) missed in {env_fail} runs; "
        f"ETA within 2x of actual among the {len(reached)} runs that reached 1e-6: {out['eta_within_2x']}"
    )
    others = [r for r in rows if r["kind"] != "quadratic"]
    if others:
        print(
            f"\n{'instance':24s} {'status':>10s} {'rounds':>6s} {'1-step hits':>11s} {'tight':>6s} "
            f"{'F final':>10s} {'F-hat(W=6)':>12s} {'F-hat(half)':>12s} {'ETA(half)':>9s}"
        )
        for r in others:
            lim = r["limits"]
            print(
                f"{r['instance']:24s} {r['status']:>10s} {r['rounds']:6d} {r['one_step']['hits']:4d}/"
                f"{r['one_step']['rounds']:<6d} {r['one_step']['tightness_median'] or 0:6.3g} "
                f"{lim['final']:10.6g} {lim['at_w6']['limit'] or float('nan'):12.6g} "
                f"{lim['at_half']['limit'] or float('nan'):12.6g} {str(lim['at_half']['eta_rounds']):>9s}"
            )
    return out


def main() -> None:
    ap = Parser(prog="convergence", description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--max-rounds", type=int, default=150)
    ap.add_argument("--routing-seconds", type=float, default=40.0)
    ap.add_argument("--sqlplan-seconds", type=float, default=60.0)
    ap.add_argument("--skip-routing", action="store_true")
    ap.add_argument("--skip-sqlplan", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "convergence.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = quadratic_sweep(args.seeds, args.max_rounds)
    if not args.skip_routing:
        rows += routing_runs(args.routing_seconds)
    if not args.skip_sqlplan:
        rows += sqlplan_runs(args.sqlplan_seconds)
    summary = summarize(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": " ".join(sys.argv),
                "seconds": round(time.perf_counter() - t0, 1),
                "summary": summary,
                "rows": rows,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"\nwrote {args.out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
