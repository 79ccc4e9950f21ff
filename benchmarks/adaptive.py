"""Ablation of adaptive block selection: today's lease order vs UCB1 vs ALNS, through the real service path.

Each run is what ``blockopt run routing --agents 3 --time-limit 30 --selection POLICY`` does: an embedded
coordinator on a loopback port and agent worker processes over HTTP, the memory store, with the stall stop
off (rounds differ in length between arms, so "N rounds without a merge" would end some arms early).

The figure (``--summarize``): per instance, one fixed target, the median final objective of lease order over
its seeds (SOC once collision-free), and per run the time from task creation to the first round at or
below it, read from the round records' closing times; a run that never gets there counts as the time limit
(a miss, counted). Per arm: median, quartiles, min-max, misses, and the ratio of medians to lease order's
with a bootstrap interval over seeds. ``lease_order-again`` is lease order a second time, the A/A control:
what noise alone gives. Arms are interleaved per seed (their order rotating), so the drift of a shared
machine hits them alike.

    .venv/bin/python -m benchmarks.adaptive --seeds 0 1 --dir benchmarks/results/adaptive2   # runs
    .venv/bin/python -m benchmarks.adaptive --summarize --dir benchmarks/results/adaptive2   # the table

One raw JSON file per run goes to ``--dir`` (its rounds included); runs already there are skipped, so a
long measurement splits into chunks of seeds.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import random
import secrets
import statistics
import sys
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from agents.fleet import spawn, terminate
from agents.worker import WorkerConfig
from benchmarks.lib.cli import Parser
from benchmarks.lib.polling import wait_until_ended
from coordinator.api.embedded import EmbeddedServer
from coordinator.api.main import create_app
from coordinator.settings import ServiceSettings
from coordinator.store.memory import MemoryStore

ARMS: dict[str, dict[str, Any]] = {
    "lease_order": {"policy": "lease_order"},
    "lease_order-again": {"policy": "lease_order"},
    "ucb1": {"policy": "ucb1"},
    "alns": {"policy": "alns"},
    "ucb1-every": {"policy": "ucb1", "every_round": True},
    "alns-every": {"policy": "alns", "every_round": True},
    "ucb1-hold": {"policy": "ucb1", "hold": True},
    "alns-hold": {"policy": "alns", "hold": True},
}
"""Selection settings per arm: ``-every`` forms new blocks after every round the coordinator may regroup,
the others only after a round that merged nothing (the default); ``-hold``: an agent whose lease found
nothing waits for the round to close, and the blocks that did not pay are formed anew (``hold``)."""
BASE = "lease_order"
INSTANCES = ("random-32-32-10:100", "random-32-32-10:200")


def run_one(arm: str, map_name: str, robots: int, seed: int, agents: int, limit: float) -> dict[str, Any]:
    """One service run: its rounds (closing second, objective, what merged, what formed) and the weights."""
    admin = secrets.token_urlsafe(24)
    settings = ServiceSettings(admin_token=SecretStr(admin), store="memory")
    store = MemoryStore()
    app = create_app(settings, store, CollectorRegistry())
    params = {
        "map": map_name,
        "scen": f"{map_name}-random-1",
        "robots": robots,
        "blocks": agents,
        "seed": seed,
        "exact_limit": 0,
    }
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    load = os.getloadavg()[0]
    with (
        EmbeddedServer(app) as server,
        httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {admin}"}, timeout=60.0
        ) as client,
    ):
        r = client.post(
            "/v1/tasks",
            json={
                "kind": "routing",
                "params": params,
                "budgets": {"seconds": limit, "rounds": 100_000},
                "stop": {"stall_rounds": 100_000},  # every arm runs to the limit: a stall stop ends the race
                "selection": ARMS[arm],
            },
        )
        r.raise_for_status()
        created = r.json()
        tid = created["id"]
        base = WorkerConfig(coordinator=server.url, task=tid, join_token=created["join_token"], seed=seed)
        children = spawn(base, agents, min(agents, os.cpu_count() or 2), log_level="warning")
        try:
            view = wait_until_ended(client, tid)
        finally:
            terminate(children)
        report = client.get(f"/v1/tasks/{tid}/report").json()
        solution = client.get(f"/v1/tasks/{tid}/solution").json()["solution"]
        spec = asyncio.run(store.get_task(tid))
        entries = asyncio.run(store.rounds(tid))
    rounds = []
    for e in entries:
        rec, sel = e.record, e.record.selection
        rounds.append(
            {
                "closed": round(e.closed_at - spec.created_at, 3),
                "opened": None if e.opened_at is None else round(e.opened_at - spec.created_at, 3),
                "objective": rec.objective,
                "proposals": rec.proposals,
                "accepted": rec.accepted,
                "engine_s": round(rec.engine_seconds, 4),
                "regrouped": rec.regrouped,
                "formed": None if sel is None else sel.formed,
                "size": None if sel is None else sel.size,
                "agent_s": None if sel is None else round(sel.seconds, 3),
            }
        )
    return {
        "arm": arm,
        "map": map_name,
        "robots": robots,
        "seed": seed,
        "agents": agents,
        "limit": limit,
        "started_utc": started,
        "load1": load,
        "status": view["status"],
        "objective": view["objective"],
        "feasible": view["feasible"],
        "soc": solution["sum_of_costs"],
        "lower_bound": solution["lower_bound"],
        "rounds": rounds,
        "selection": report.get("selection"),
    }


def time_to(run: dict[str, Any], target: float) -> float | None:
    return next((r["closed"] for r in run["rounds"] if r["objective"] <= target + 1e-9), None)


def _q(xs: list[float]) -> tuple[float, float, float]:
    """Quartiles (exclusive method; with fewer than 2 values, the value three times)."""
    if len(xs) < 2:
        return (xs[0], xs[0], xs[0])
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, q2, q3


def bootstrap_ratio(mine: dict[int, float], base: dict[int, float], draws: int = 2000) -> tuple[float, float]:
    """5-95% interval of median(mine) / median(base), resampling seeds with replacement (paired)."""
    seeds = sorted(set(mine) & set(base))
    rng = random.Random(0)
    out = []
    for _ in range(draws):
        pick = [rng.choice(seeds) for _ in seeds]
        out.append(statistics.median(mine[s] for s in pick) / statistics.median(base[s] for s in pick))
    out.sort()
    return out[int(0.05 * draws)], out[int(0.95 * draws) - 1]


def summarize(runs: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    lines: list[str] = []
    table: dict[str, Any] = {}
    for inst in sorted({(r["map"], r["robots"]) for r in runs}):
        mine = [r for r in runs if (r["map"], r["robots"]) == inst]
        base = [r for r in mine if r["arm"] == BASE]
        if not base:
            continue
        target = statistics.median(r["objective"] for r in base)
        lb = base[0]["lower_bound"]
        limit = base[0]["limit"]
        name = f"{inst[0]} k={inst[1]}"
        lines += [
            f"\n{name}: target = lease order's median final objective {target:.0f} "
            f"(SOC/LB {target / lb:.4f}); time to it, a miss counted as {limit:.0f} s",
            "| arm | seeds | reached | median s | IQR s | min-max s | median / lease order (90% CI) "
            "| median final SOC/LB (min-max) | median rounds | load1 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        base_t = {r["seed"]: time_to(r, target) or limit for r in base}
        rows = {}
        for arm in [a for a in ARMS if any(r["arm"] == a for r in mine)]:
            these = sorted((r for r in mine if r["arm"] == arm), key=lambda r: r["seed"])
            t = {r["seed"]: time_to(r, target) for r in these}
            capped = {s: (v if v is not None else limit) for s, v in t.items()}
            xs = sorted(capped.values())
            q1, med, q3 = _q(xs)
            lo, hi = bootstrap_ratio(capped, base_t)
            ratio = med / statistics.median(base_t.values())
            socs = sorted(r["objective"] / r["lower_bound"] for r in these)
            rows[arm] = {
                "target": target,
                "times": {str(s): v for s, v in t.items()},
                "median": med,
                "q1": q1,
                "q3": q3,
                "reached": sum(v is not None for v in t.values()),
                "ratio": ratio,
                "ratio_ci90": [lo, hi],
                "final_soc_lb": socs,
            }
            lines.append(
                f"| {arm} | {len(these)} | {rows[arm]['reached']}/{len(these)} | {med:.1f} "
                f"| {q1:.1f}-{q3:.1f} "
                f"| {xs[0]:.1f}-{xs[-1]:.1f} | {ratio:.2f} ({lo:.2f}-{hi:.2f}) "
                f"| {statistics.median(socs):.4f} ({socs[0]:.4f}-{socs[-1]:.4f}) "
                f"| {statistics.median(len(r['rounds']) for r in these):.0f} "
                f"| {statistics.median(r['load1'] for r in these):.1f} |"
            )
        table[name] = rows
    return lines, table


def main() -> None:
    ap = Parser(prog="adaptive", description=__doc__.splitlines()[0])
    ap.add_argument("--instances", nargs="+", default=list(INSTANCES), help="MAP:ROBOTS (scenario random-1)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--arms", nargs="+", default=["lease_order", "lease_order-again", "ucb1", "alns"],
                    choices=list(ARMS))  # fmt: skip
    ap.add_argument("--dir", type=Path, default=Path(__file__).parent / "results" / "adaptive")
    ap.add_argument("--summarize", action="store_true", help="print the table of the runs in --dir")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    if not args.summarize:
        for seed in args.seeds:
            for inst in args.instances:
                map_name, robots = inst.rsplit(":", 1)
                shift = seed % len(args.arms)  # rotate: no arm always runs first after a pause
                for arm in args.arms[shift:] + args.arms[:shift]:
                    path = args.dir / f"{map_name}-k{robots}-s{seed}-{arm}.json"
                    if path.exists():
                        continue
                    row = run_one(arm, map_name, int(robots), seed, args.agents, args.limit)
                    path.write_text(json.dumps(row))
                    print(
                        f"  {map_name} k={robots} seed {seed} {arm:<18s} {row['status']:<12s} "
                        f"SOC/LB {row['objective'] / row['lower_bound']:.4f} rounds {len(row['rounds'])} "
                        f"load {row['load1']:.1f}",
                        file=sys.stderr,
                        flush=True,
                    )
    runs = [json.loads(p.read_text()) for p in sorted(args.dir.glob("*.json")) if p.name != "summary.json"]
    lines, table = summarize(runs)
    (args.dir / "summary.json").write_text(json.dumps(table, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
