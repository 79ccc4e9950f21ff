"""The round engine's own costs, side by side in one process.

- ``overhead``: engine time per round (objective evaluations excluded) and rounds/s of both merge policies
  on the same quadratic instance (n = 64 blocks, every pair coupled), so their ratio holds on a noisy
  machine even where absolute times do not.
- ``round-steps``: one round of 64 proposals on quadratic-64 timed step by step, each step's old and new
  form alternated, median of ``--repeats``: candidate pairs by the footprint index (``dense=False``) and by
  the incidence-matrix product (``dense=True``, what ``candidate_pairs`` picks here); the exact check of a
  64-block combination block by block and as one product; the pairs' interactions; and the interference
  graph as ``RoundEngine`` builds it in networkx, for scale.

- ``commit-cpu``: the coordinator's CPU per lease, per answer and per commit against the team size, on the
  real service (``CoordinatorService`` over a memory store, async routing): N agents lease at once, then
  answer in turn, each from the contract it was granted (later answers are stale, as in a team), and lease
  again; the proposers run for real outside the measured spans (``time.process_time`` of each ``lease`` and
  ``submit``). Another tree's coordinator is measured from that tree's directory (``cd TREE &&
  PYTHONPATH=. .venv/bin/python -m benchmarks.engine commit-cpu``): with ``-m`` the current directory comes
  before ``PYTHONPATH``, so ``PYTHONPATH=TREE`` from this checkout measures this checkout.

    .venv/bin/python -m benchmarks.engine overhead [--blocks 64] [--rounds 30]
    .venv/bin/python -m benchmarks.engine commit-cpu [--agents 1 2 4 8] [--answers 40] [--json FILE]
    .venv/bin/python -m benchmarks.engine round-steps [--repeats 30] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np

from benchmarks.lib.cli import Parser, write_json
from coordinator.engine.interference import candidate_pairs
from coordinator.engine.rounds import EngineSettings
from coordinator.runtime.inproc import RunSettings, run_inproc
from tasks.quadratic import QuadraticParams, QuadraticProposer, QuadraticProposerParams, QuadraticTask

if TYPE_CHECKING:
    from coordinator.runtime.wire import LeaseGrant


def measure_policy(policy: str, params: QuadraticParams, rounds: int) -> dict[str, float]:
    """One in-process run of ``policy``: its rounds' engine and evaluation times and the gap reached."""
    task = QuadraticTask(params)
    t0 = time.perf_counter()
    result = run_inproc(
        task,
        QuadraticProposerParams(),
        RunSettings(agents=params.blocks, max_rounds=rounds),
        EngineSettings(merge_policy=policy),  # type: ignore[arg-type]
    )
    wall = time.perf_counter() - t0
    recs = result.ledger.records
    engine = [r.engine_seconds for r in recs]
    return {
        "rounds": len(recs),
        "status": result.status,
        "rounds_per_s": len(recs) / wall,
        "engine_ms_median": 1000 * statistics.median(engine),
        "engine_ms_p90": 1000 * sorted(engine)[int(0.9 * (len(engine) - 1))],
        "eval_ms_median": 1000 * statistics.median(r.eval_seconds for r in recs),
        "edges_median": statistics.median(r.interfering for r in recs),
        "checks_median": statistics.median(r.checks for r in recs),
        "rel_gap": (result.snapshot.objective - result.engine.reference.value)
        / abs(result.engine.reference.value),
    }


def overhead(args: argparse.Namespace) -> int:
    params = QuadraticParams(blocks=args.blocks, dim=args.dim, coupling=args.coupling, seed=1)
    print(
        f"quadratic n={args.blocks} d={args.dim} coupling={args.coupling}, {args.blocks} agents, "
        f"up to {args.rounds} rounds per policy"
    )
    rows = {p: measure_policy(p, params, args.rounds) for p in ("independent", "checked")}
    cols = ["rounds", "status", "rounds_per_s", "engine_ms_median", "engine_ms_p90", "eval_ms_median",
            "edges_median", "checks_median", "rel_gap"]  # fmt: skip
    print(f"{'policy':<12}" + "".join(f"{c:>17}" for c in cols))
    for policy, row in rows.items():
        cells = "".join(f"{row[c]:>17.4g}" if isinstance(row[c], float) else f"{row[c]!s:>17}" for c in cols)
        print(f"{policy:<12}{cells}")
    ratio = rows["checked"]["engine_ms_median"] / rows["independent"]["engine_ms_median"]
    print(f"checked / independent engine overhead per round: {ratio:.2f}x")
    return 0


def timed(fn: Callable[[], Any], repeats: int) -> float:
    """Median seconds of ``fn`` over ``repeats`` calls."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def round_steps(args: argparse.Namespace) -> int:
    task = QuadraticTask(QuadraticParams(blocks=64, dim=4, coupling=0.3))
    state = task.initial_state()
    proposer = QuadraticProposer()
    drafts = [proposer.propose({"block": b, "data": task.contract(state, b)}) for b in range(64)]
    values = {d.block: np.asarray(d.value) for d in drafts if d is not None}
    blocks = list(values)
    footprints = [task.footprint(state, b, values[b]) for b in blocks]
    items = [(b, values[b]) for b in blocks]
    _, pairs = candidate_pairs(blocks, footprints)
    f0 = task.objective(state)

    def graph() -> nx.Graph:  # as RoundEngine._interference_graph does it
        g = nx.Graph()
        for i in range(len(blocks)):
            g.add_node(i, gain=1.0)
        found = task.interactions(state, items, pairs, f0)
        g.add_edges_from((i, j, {"c": c}) for (i, j), c in zip(pairs, found, strict=True) if abs(c) > 0)
        return g

    def blockwise() -> float:
        task.BLOCKWISE_CHANGES = 10**9
        try:
            return task.evaluate_change(state, values)
        finally:
            del task.BLOCKWISE_CHANGES

    def pairs_by(dense: bool) -> Callable[[], Any]:
        return lambda: candidate_pairs(blocks, footprints, dense=dense)

    steps: list[tuple[str, Callable[[], Any]]] = [
        ("candidate pairs, index (before)", pairs_by(False)),
        ("candidate pairs, incidence product (after)", pairs_by(True)),
        ("exact check of 64 blocks, block by block (before)", blockwise),
        ("exact check of 64 blocks, one product (after)", lambda: task.evaluate_change(state, values)),
        (
            "interactions of the 2,016 pairs (task.interactions)",
            lambda: task.interactions(state, items, pairs, f0),
        ),
        ("networkx interference graph incl. interactions (rounds.py)", graph),
    ]
    rows = {name: timed(fn, args.repeats) for name, fn in steps}
    load = os.getloadavg()
    print(f"quadratic-64, 64 proposals, {len(pairs)} pairs; median of {args.repeats}; load {load[0]:.2f}")
    for name, seconds in rows.items():
        print(f"{name:62s} {1e3 * seconds:8.2f} ms   {1e6 * seconds / 64:8.1f} us per proposal")
    if args.json:
        write_json(args.json, {"load": load, "repeats": args.repeats, "seconds": rows})
    return 0


async def _commit_cpu_team(n: int, answers: int, params: dict[str, Any], budget: float) -> dict[str, Any]:
    # (the service's modules, imported only by this command)
    from prometheus_client import CollectorRegistry

    from coordinator.runtime.metrics import ServiceMetrics
    from coordinator.runtime.service import CoordinatorService
    from coordinator.runtime.wire import CreateTask, JoinRequest, ProposalIn
    from coordinator.settings import ServiceSettings
    from coordinator.store import MemoryStore

    service = CoordinatorService(ServiceSettings(), MemoryStore(), ServiceMetrics(CollectorRegistry()))
    spec, join, _ = await service.create(
        CreateTask(kind="routing", params={**params, "blocks": n + 1 if n > 1 else 1}, mode="async")
    )
    agents = []
    for i in range(n):
        joined = await service.join(spec.id, join, JoinRequest(name=f"a{i}"))
        agents.append(await service.authenticate(spec.id, f"Bearer {joined.token}"))
    built = service.cache.built(spec.id)
    assert built is not None
    task = built.task
    proposer = task.make_proposer(task.ProposerParams(time_budget=budget), seed=1)
    lease_cpu: list[float] = []
    answer_cpu: list[float] = []
    codes: Counter[str] = Counter()

    async def lease(i: int) -> LeaseGrant:
        t0 = time.process_time()
        grant = await service.lease(spec.id, agents[i])
        lease_cpu.append(time.process_time() - t0)
        return grant

    try:
        grants = [await lease(i) for i in range(n)]
        for k in range(answers):
            i = k % n
            g = grants[i]
            draft = proposer.propose(g.contract)
            if draft is None:
                await service.release(spec.id, agents[i], g.lease_id)
                codes["declined"] += 1
            else:
                body = ProposalIn(
                    lease_id=g.lease_id, block=g.block, base_version=g.version, value=draft.value,
                    predicted_improvement=draft.predicted_improvement,
                )  # fmt: skip
                t0 = time.process_time()
                view, _ = await service.submit(spec.id, agents[i], body, wait=30.0)
                answer_cpu.append(time.process_time() - t0)
                codes[view.verdict.code if view.verdict else "pending"] += 1
            grants[i] = await lease(i)
        head = await service.store.get_head(spec.id)
    finally:
        await service.close()
    ms = 1000.0
    return {
        "agents": n,
        "lease_ms": statistics.median(lease_cpu) * ms,
        "answer_ms": statistics.median(answer_cpu) * ms if answer_cpu else None,
        "commit_ms": (sum(lease_cpu) + sum(answer_cpu)) / max(1, len(answer_cpu)) * ms,
        "answers": len(answer_cpu),
        "codes": dict(codes),
        "objective": head.objective,
    }


def commit_cpu(args: argparse.Namespace) -> int:
    params = {
        "map": args.map, "scen": args.scen, "robots": args.robots, "seed": 1, "exact_limit": 0,
        "initial_repair": args.initial_repair,
    }  # fmt: skip
    rows = [asyncio.run(_commit_cpu_team(n, args.answers, params, args.budget)) for n in args.agents]
    one = rows[0]["commit_ms"]
    print(f"{'agents':>6} {'lease ms':>9} {'answer ms':>10} {'per commit ms':>14} {'x N=first':>9}  verdicts")
    for r in rows:
        answer = "-" if r["answer_ms"] is None else f"{r['answer_ms']:.2f}"
        ratio = r["commit_ms"] / one if one else float("nan")
        cells = f"{r['agents']:>6} {r['lease_ms']:>9.2f} {answer:>10} {r['commit_ms']:>14.2f} {ratio:>9.2f}"
        print(f"{cells}  {r['codes']}")
    if args.json:
        write_json(args.json, {"args": {k: v for k, v in vars(args).items() if k != "run"}, "rows": rows})
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="engine", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    o = sub.add_parser("overhead", help="engine time per round of both merge policies")
    o.add_argument("--blocks", type=int, default=64)
    o.add_argument("--dim", type=int, default=4)
    o.add_argument("--coupling", type=float, default=0.3)
    o.add_argument("--rounds", type=int, default=30)
    o.set_defaults(run=overhead)
    r = sub.add_parser("round-steps", help="one 64-proposal round step by step, old and new forms")
    r.add_argument("--repeats", type=int, default=30)
    r.add_argument("--json", default=None, help="write the raw timings here")
    r.set_defaults(run=round_steps)
    c = sub.add_parser("commit-cpu", help="the coordinator's CPU per commit against the team size")
    c.add_argument("--agents", type=int, nargs="+", default=[1, 2, 4, 8])
    c.add_argument("--answers", type=int, default=40, help="answers per team size")
    c.add_argument("--budget", type=float, default=0.2, help="seconds of LNS per answer")
    c.add_argument("--map", default="random-32-32-10")
    c.add_argument("--scen", default="random-32-32-10-random-1")
    c.add_argument("--robots", type=int, default=300)
    c.add_argument("--initial-repair", type=float, default=5.0)
    c.add_argument("--json", default=None, help="write the rows here")
    c.set_defaults(run=commit_cpu)
    args = ap.parse_args(argv)
    if args.command == "commit-cpu" and (min(args.agents) < 1 or args.answers < 1 or args.budget <= 0):
        ap.error("commit-cpu: --agents, --answers and --budget must be positive")
    if getattr(args, "repeats", 1) < 1 or getattr(args, "rounds", 1) < 1:
        ap.error("--repeats and --rounds want a positive count")
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
