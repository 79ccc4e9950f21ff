"""Does the team pay? 3 agents vs 1 agent on routing at the same wall time, the agents really side by side.

In ``run_team`` (routing_common) the agents take turns on one core, so a team can only match one agent
with the same total compute. Here every agent is its own process (one worker each, keeping its proposer
and its per-block reservation tables between leases); in each round the coordinator (this process, the
real round engine with the checked merge) builds the leased blocks' contracts, the agents propose at the
same time, and the proposals of different agents on disjoint neighbourhoods merge in one round.

Both configurations use the product's default partition (one block per agent: 1 agent holds every
robot), the same initial plan (computed once before the clock starts) and the same wall-clock limit; they
run one after the other, alternating, on this 2-core machine, so they see the same background load.

    .venv/bin/python benchmarks/routing_parallel.py --json benchmarks/results/routing_parallel.json
    .venv/bin/python benchmarks/routing_parallel.py --only random-32-32-10:200 --limit 30 --teams 1 3
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import check  # noqa: E402
from coordinator.engine.records import Usage  # noqa: E402
from coordinator.engine.rounds import EngineSettings, RoundEngine  # noqa: E402
from coordinator.reports.ledger import RunLedger  # noqa: E402
from coordinator.runtime.inproc import blocks_for_round, contract_envelope, proposal_of  # noqa: E402
from tasks.base import Draft, Proposer  # noqa: E402
from tasks.registry import create_task  # noqa: E402
from tasks.routing import RoutingTask  # noqa: E402

CASES = [("random-32-32-10", 200), ("warehouse-10-20-10-2-1", 200)]

_PROPOSER: Proposer | None = None


def _init_agent(params: dict[str, Any], time_budget: float, seed: int) -> None:
    global _PROPOSER
    task = create_task("routing", params)
    _PROPOSER = task.make_proposer(task.ProposerParams(time_budget=time_budget), seed=seed)


def _propose(contract: dict[str, Any]) -> tuple[Draft | None, float]:
    assert _PROPOSER is not None
    t0 = time.perf_counter()
    draft = _PROPOSER.propose(contract)
    return draft, time.perf_counter() - t0


def run_parallel(
    params: dict[str, Any], agents: int, limit: float, time_budget: float = 0.5, seed: int = 0
) -> dict[str, Any]:
    """One run: ``agents`` proposer processes against the round engine for ``limit`` seconds."""
    task = create_task("routing", {**params, "blocks": agents})
    assert isinstance(task, RoutingTask)
    t0 = time.perf_counter()
    engine = RoundEngine(task, EngineSettings(merge_policy="checked"))  # type: ignore[arg-type]
    snap = engine.initial_snapshot()
    initial_s = time.perf_counter() - t0
    ledger = RunLedger(
        engine.reference,
        snap.objective,
        engine.tolerance,
        3,
        a_priori=engine.a_priori.constants if engine.a_priori else None,
    )
    ctx = multiprocessing.get_context("fork")
    pools = [
        ProcessPoolExecutor(
            1,
            mp_context=ctx,
            initializer=_init_agent,
            initargs=({**params, "blocks": agents}, time_budget, a),
        )
        for a in range(agents)
    ]
    sweep = math.ceil(task.n_blocks / agents)
    curve: list[tuple[float, int, int]] = []
    first: float | None = None
    started = time.perf_counter()
    try:
        for pool in pools:  # start the workers before the clock matters
            pool.submit(time.sleep, 0).result()
        started = time.perf_counter()
        round_index = 0
        while time.perf_counter() - started < limit:
            left = limit - (time.perf_counter() - started)
            leased = blocks_for_round(task.n_blocks, agents, round_index)
            futures = [
                pools[a].submit(_propose, contract_envelope(task, snap, b, {"seconds": left}))  # type: ignore[arg-type]
                for a, b in enumerate(leased)
            ]
            proposals = []
            for a, fut in enumerate(futures):
                draft, seconds = fut.result()
                if draft is not None:
                    proposals.append(
                        proposal_of(draft, f"agent-{a}", snap.version, Usage(calls=1, seconds=seconds))
                    )
            predicted = ledger.predict_next()
            outcome = engine.run_round(
                snap,
                proposals,
                round_index,
                regroup=(ledger.stalled + 1) % sweep == 0,
                predicted_gap=predicted,
            )
            snap = outcome.snapshot
            ledger.add_round(outcome.record, proposals, outcome.verdicts)
            state = snap.state
            now = time.perf_counter() - started
            curve.append((round(now, 2), state.soc, state.conflicts))
            if first is None and state.conflicts == 0:
                first = now
            round_index += 1
    finally:
        for pool in pools:
            pool.shutdown(cancel_futures=True)
    verdict = check(task, [[task.grid.xy(c) for c in p] for p in snap.state.paths])
    lb = task.lower_bound()
    return {
        "agents": agents,
        "initial_s": round(initial_s, 2),
        "seconds": round(time.perf_counter() - started, 2),
        "rounds": len(curve),
        "merged_per_round": round(sum(r.accepted for r in ledger.records) / max(1, len(ledger.records)), 2),
        "valid": verdict.valid,
        "conflicts": verdict.conflicts,
        "soc": verdict.soc,
        "lower_bound": lb,
        "ratio": round(verdict.soc / lb, 4),
        "first_feasible_s": None if first is None else round(first, 2),
        "curve": curve,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--teams", type=int, nargs="*", default=[1, 3])
    ap.add_argument("--only", nargs="*", metavar="MAP:K")
    ap.add_argument("--repeats", type=int, default=1, help="alternating repetitions of every configuration")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    try:
        cases = [(s.split(":")[0], int(s.split(":")[1])) for s in args.only] if args.only else CASES
    except (IndexError, ValueError):
        print(f"routing_parallel: error: --only wants MAP:K, got {args.only}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for map_name, k in cases:
        params = {"map": map_name, "scen": f"{map_name}-random-1", "robots": k}
        for rep in range(args.repeats):
            for agents in args.teams:
                row = {
                    "instance": f"{map_name} k={k}",
                    "repeat": rep,
                    **run_parallel(params, agents, args.limit),
                }
                rows.append(row)
                print(json.dumps({key: v for key, v in row.items() if key != "curve"}), flush=True)
    print(
        f"\n{'instance':28} {'agents':>6} {'SOC/LB':>8} {'rounds':>6} {'merged/rd':>9} {'first free s':>12}"
    )
    for r in rows:
        print(
            f"{r['instance']:28} {r['agents']:>6} {r['ratio'] if r['valid'] else 'infeas.':>8}"
            f" {r['rounds']:>6} {r['merged_per_round']:>9}"
            f" {r['first_feasible_s'] if r['first_feasible_s'] is not None else '-':>12}"
        )
    for map_name, k in cases:
        inst = f"{map_name} k={k}"
        by = {a: [r for r in rows if r["instance"] == inst and r["agents"] == a] for a in args.teams}
        if len(args.teams) == 2 and all(by.values()):
            one, team = (by[a] for a in sorted(args.teams))
            pairs = [t["soc"] / o["soc"] for o, t in zip(one, team, strict=True) if o["valid"] and t["valid"]]
            if pairs:
                print(f"{inst}: SOC team / SOC one agent = {', '.join(f'{p:.4f}' for p in pairs)}")
    if args.json:
        meta = {
            "limit": args.limit,
            "teams": args.teams,
            "cpus": os.cpu_count(),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
