"""Ablation of adaptive block selection: today's lease order vs UCB1 vs ALNS, through the real service path.

Each run is what ``blockopt run routing --agents 3 --time-limit 30 --selection POLICY`` does: an embedded
coordinator on a loopback port and agent worker processes over HTTP, the memory store. The figure is the
time each policy needs to reach the final objective of lease order on the same instance and seed (SOC once
collision-free), read from the round records' closing times. Policies are interleaved per seed, and their
order rotates from seed to seed, so the load of a shared machine hits them alike.

    .venv/bin/python benchmarks/adaptive.py                                   # k=100 and 200, 5 seeds, 30 s
    .venv/bin/python benchmarks/adaptive.py --robots 100 --seeds 2 --limit 10  # a quick look
    .venv/bin/python benchmarks/adaptive.py --kind quadratic --robots 64 --agents 4 \
        --policies lease_order ucb1 alns --limit 20 --out benchmarks/results/adaptive_quadratic.json
                                                       # quadratic: "robots" = blocks; block preference only

Raw rows (trajectories included) go to benchmarks/results/adaptive.json (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
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

POLICIES = ("lease_order", "ucb1", "alns", "ucb1-every", "alns-every", "lease_order-again")
"""Arms of the ablation: ``-every`` forms new blocks after every round (``every_round``), the others only
after a round that merged nothing (the default). ``lease_order-again`` is lease order run a second time: the
A/A control, showing what noise and the metric's own bias give (lease order's time is to its *own* final
value, its last improvement; a challenger as good, not better, crosses that value earlier half the time)."""
MAP, SCEN = "random-32-32-10", "random-32-32-10-random-1"


def params_of(kind: str, size: int, agents: int, seed: int) -> dict[str, Any]:
    if kind == "quadratic":  # many more blocks than agents, sparse coupling: which block to lease matters
        return {"blocks": size, "dim": 4, "coupling": 0.5, "neighbours": 4, "seed": seed}
    return {"map": MAP, "scen": SCEN, "robots": size, "blocks": agents, "seed": seed, "exact_limit": 0}


def run_one(
    label: str,
    robots: int,
    seed: int,
    agents: int,
    limit: float,
    generators: list[str] | None = None,
    kind: str = "routing",
) -> dict[str, Any]:
    """One service run; its rounds' (seconds since creation, objective) and the learned weights."""
    admin = secrets.token_urlsafe(24)
    settings = ServiceSettings(admin_token=SecretStr(admin), store="memory")
    store = MemoryStore()
    app = create_app(settings, store, CollectorRegistry())
    params = params_of(kind, robots, agents, seed)
    with (
        EmbeddedServer(app) as server,
        httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {admin}"}, timeout=60.0
        ) as client,
    ):
        r = client.post(
            "/v1/tasks",
            json={
                "kind": kind,
                "params": params,
                "budgets": {"seconds": limit, "rounds": 100_000},
                "selection": {
                    "policy": label.split("-")[0],
                    "every_round": label.endswith("-every"),
                    "generators": generators,
                },
            },
        )
        r.raise_for_status()
        created = r.json()
        tid = created["id"]
        base = WorkerConfig(coordinator=server.url, task=tid, join_token=created["join_token"], seed=seed)
        children = spawn(base, agents, min(agents, os.cpu_count() or 2), log_level="warning")
        try:
            while (view := client.get(f"/v1/tasks/{tid}").json())["status"] == "running":
                time.sleep(0.5)
        finally:
            terminate(children)
        report = client.get(f"/v1/tasks/{tid}/report").json()
        solution = client.get(f"/v1/tasks/{tid}/solution").json()
        spec = asyncio.run(store.get_task(tid))
        entries = asyncio.run(store.rounds(tid))
    trajectory = [(round(e.closed_at - spec.created_at, 3), e.record.objective) for e in entries]
    sol = solution["solution"] if kind == "routing" else {}
    return {
        "policy": label,
        "robots": robots,
        "seed": seed,
        "status": view["status"],
        "rounds": len(entries),
        "objective": view["objective"],
        "feasible": view["feasible"],
        "kind": kind,
        "soc": sol["sum_of_costs"] if kind == "routing" else None,
        "lower_bound": sol["lower_bound"] if kind == "routing" else None,
        "regroups": sum(1 for e in entries if e.record.regrouped),
        "trajectory": trajectory,
        "selection": report.get("selection"),
    }


def time_to(trajectory: list[tuple[float, float]], target: float) -> float | None:
    return next((t for t, obj in trajectory if obj <= target + 1e-9), None)


def rounds_to(trajectory: list[tuple[float, float]], target: float) -> int | None:
    """Rounds to the target: less sensitive than seconds to how loaded the machine was during the run."""
    return next((i + 1 for i, (_, obj) in enumerate(trajectory) if obj <= target + 1e-9), None)


def _med(xs: list[float], fmt: str = ".1f") -> str:
    return format(statistics.median(xs), fmt) if xs else "-"


def summarize(rows: list[dict[str, Any]], robots: int) -> list[str]:
    by = {(r["policy"], r["seed"]): r for r in rows if r["robots"] == robots}
    seeds = sorted({s for _, s in by})
    lines = [
        f"\n{rows[0].get('kind', 'routing')} size {robots}: time to reach lease order's final objective "
        f"(same seed), {len(seeds)} seeds",
        "| policy | reached | median s | min-max s | median ratio (reached) | median ratio (never = inf) "
        "| ratio per seed "
        "| median rounds to it | median SOC/LB | median rounds |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for policy in sorted({p for p, _ in by}, key=POLICIES.index):
        times: list[float | None] = []
        ratios: list[float | None] = []
        rounds: list[float] = []
        for s in seeds:
            base, mine = by.get(("lease_order", s)), by.get((policy, s))
            if base is None or mine is None:
                continue
            target = base["objective"]
            t_base, t = time_to(base["trajectory"], target), time_to(mine["trajectory"], target)
            times.append(t)
            if (n := rounds_to(mine["trajectory"], target)) is not None:
                rounds.append(float(n))
            ratios.append(None if (t is None or not t_base) else t / t_base)
        got = [t for t in times if t is not None]
        rat = [x for x in ratios if x is not None]
        runs = [by[(policy, s)] for s in seeds if (policy, s) in by]
        soc = [r["soc"] / r["lower_bound"] for r in runs if r["feasible"] and r["soc"] is not None]
        spread = f"{min(got):.1f}-{max(got):.1f}" if got else "-"
        every = [math.inf if x is None else x for x in ratios]
        per_seed = ", ".join("never" if x is None else f"{x:.2f}" for x in ratios)
        lines.append(
            f"| {policy} | {len(got)}/{len(times)} | {_med(got)} | {spread} | {_med(rat, '.2f')} "
            f"| {_med(every, '.2f')} "
            f"| {per_seed} | {_med(rounds, '.0f')} "
            f"| {_med(soc, '.4f')} | {_med([float(r['rounds']) for r in runs], '.0f')} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=["routing", "quadratic"], default="routing")
    ap.add_argument("--robots", type=int, nargs="+", default=[100, 200], help="robots (quadratic: blocks)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--generators", nargs="+", default=None, help="a subset of routing's generators")
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "adaptive.json")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for seed in range(args.seeds):
        for robots in args.robots:
            policies = args.policies
            shift = seed % len(policies)  # rotate the order so no policy always runs first after a pause
            for policy in policies[shift:] + policies[:shift]:
                row = run_one(policy, robots, seed, args.agents, args.limit, args.generators, args.kind)
                rows.append(row)
                print(
                    f"  k={robots} seed {seed} {policy:<11s} {row['status']:<16s} "
                    f"objective {row['objective']:.0f} feasible {row['feasible']} rounds {row['rounds']} "
                    f"regroups {row['regroups']}",
                    file=sys.stderr,
                    flush=True,
                )
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps({"args": {**vars(args), "out": str(args.out)}, "runs": rows}))
    for robots in args.robots:
        for line in summarize(rows, robots):
            print(line)


if __name__ == "__main__":
    main()
