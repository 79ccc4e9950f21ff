"""The coordinator's CPU per commit against the team size, in one process (issue 31, item 5).

An async routing task on the real service (``CoordinatorService`` over a memory store): N agents lease at
once, then answer in turn, each from the contract it was granted (so later answers are stale, as in a
team), and lease again. The proposers run for real but outside the measured spans; what is measured is the
process CPU (``time.process_time``) of each ``lease`` and each ``submit`` (the arrival's scoring, merge and
commit). Side by side per N: CPU per lease, per answer, and per commit (lease + answer), and the verdicts.

    .venv/bin/python benchmarks/commit_cpu.py --agents 1 2 4 8 --answers 40
    PYTHONPATH=/tmp/main-tree .venv/bin/python benchmarks/commit_cpu.py ...   (another tree's coordinator)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coordinator.runtime.wire import LeaseGrant


async def measure(n: int, answers: int, params: dict[str, Any], budget: float) -> dict[str, Any]:
    # (imported here: bad input is refused before the coordinator's imports)
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
    task = service._built[spec.id].task
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--answers", type=int, default=40, help="answers per team size")
    ap.add_argument("--budget", type=float, default=0.2, help="seconds of LNS per answer")
    ap.add_argument("--map", default="random-32-32-10")
    ap.add_argument("--scen", default="random-32-32-10-random-1")
    ap.add_argument("--robots", type=int, default=300)
    ap.add_argument("--initial-repair", type=float, default=5.0)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.agents) or args.answers < 1 or args.budget <= 0:
        print("commit_cpu.py: error: --agents, --answers and --budget must be positive", file=sys.stderr)
        return 2
    params = {
        "map": args.map, "scen": args.scen, "robots": args.robots, "seed": 1, "exact_limit": 0,
        "initial_repair": args.initial_repair,
    }  # fmt: skip
    rows = [asyncio.run(measure(n, args.answers, params, args.budget)) for n in args.agents]
    one = rows[0]["commit_ms"]
    print(f"{'agents':>6} {'lease ms':>9} {'answer ms':>10} {'per commit ms':>14} {'x N=first':>9}  verdicts")
    for r in rows:
        answer = "-" if r["answer_ms"] is None else f"{r['answer_ms']:.2f}"
        ratio = r["commit_ms"] / one if one else float("nan")
        cells = f"{r['agents']:>6} {r['lease_ms']:>9.2f} {answer:>10} {r['commit_ms']:>14.2f} {ratio:>9.2f}"
        print(f"{cells}  {r['codes']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
