"""sqlplan team runs through the real service path, with their trajectories: time to a target, the objective
at fixed times, the ablation of block selection, and how often screening agreed with the exact cost.

Each run is what ``blockopt run sqlplan --agents N --time-limit T --selection POLICY`` does (an embedded
coordinator on a loopback port, agent worker processes over HTTP, the memory store), read back from the
store: every round's closing time and objective, and every proposal's verdict (the agent's predicted gain
against the exact one the coordinator measured). Runs are interleaved per seed, their order rotated from
seed to seed, so the load of a shared machine hits the policies alike.

    # issue 14: SF 0.01 targets (<= 3,800 without a budget, <= 4,000 with 7 MiB), 3 policies x 3 seeds
    .venv/bin/python benchmarks/sqlplan_team.py --budgets none 7 --policies lease_order ucb1 alns \\
        --seeds 0 --limit 120 --out benchmarks/results/sqlplan_team_seed0.json
    # issue 13 item 5: SF 1, agents screening on SF 0.01, 10 minutes
    .venv/bin/python benchmarks/sqlplan_team.py --scale 1 --screen-scale 0.01 --reference-cap 1000000 \\
        --plan-cap-factor 1 \\
        --limit 600 --out benchmarks/results/sqlplan_sf1.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from agents.fleet import spawn, terminate  # noqa: E402
from agents.worker import WorkerConfig  # noqa: E402
from coordinator.api.embedded import EmbeddedServer  # noqa: E402
from coordinator.api.main import create_app  # noqa: E402
from coordinator.settings import ServiceSettings  # noqa: E402
from coordinator.store.memory import MemoryStore  # noqa: E402

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
            while (view := client.get(f"/v1/tasks/{tid}").json())["status"] == "running":
                time.sleep(0.5)
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--screen-scale", type=float, default=None)
    ap.add_argument("--reference-cap", type=int, default=None)
    ap.add_argument("--plan-cap-factor", type=float, default=None)
    ap.add_argument(
        "--screen-exact-checks", type=int, default=5, help="exact evaluations per screened round at most"
    )
    ap.add_argument("--budgets", nargs="+", default=["none"], help="'none' or MiB")
    ap.add_argument("--policies", nargs="+", default=["lease_order"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--limit", type=float, default=120.0)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--processes", type=int, default=None)
    ap.add_argument("--proposal-seconds", type=float, default=10.0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--summarize", type=Path, nargs="+", default=None, help="only print the tables of these")
    a = ap.parse_args()
    if a.summarize:
        rows = [r for f in a.summarize for r in json.loads(f.read_text())["rows"]]
        report(rows, list(dict.fromkeys(r["budget"] for r in rows)))
        return
    if a.out is None:
        ap.error("--out is required")
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
                a.out.parent.mkdir(parents=True, exist_ok=True)
                a.out.write_text(json.dumps({"args": vars(a) | {"out": str(a.out)}, "rows": rows}, indent=1))
    report(rows, a.budgets)


def report(rows: list[dict[str, Any]], budgets: list[str]) -> None:
    default = float(rows[0]["totals"]["default"]) if rows and rows[0]["totals"] else 0.0
    for budget in budgets:
        for line in summarize(rows, budget, default):
            print(line)
    print("prediction agreement (verdicts):", json.dumps(screening(rows)))
    print("screen agreement (exactly checked combinations):", json.dumps(screen_agreement(rows)))


if __name__ == "__main__":
    main()
