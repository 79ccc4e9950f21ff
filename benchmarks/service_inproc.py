"""The coordinator's service layer without HTTP: what a proposal costs before uvicorn sees it (not a test).

64 simulated agents run the `blockopt agent` loop (lease, propose, submit with the verdict and the next
lease) as coroutines on one event loop against a ``CoordinatorService`` with the memory store,
quadratic-64 as in ``service_throughput.py``. The process's CPU per proposal, less what the agents' own
proposer and request bodies took (timed apart), is the service layer's cost: the part of a proposal's
server CPU that no HTTP stack can remove. Compare it with the trivial endpoint's whole request in
``service_throughput.py``: 0.5x that endpoint needs the two costs within 2x of each other.

    .venv/bin/python -m benchmarks.service_inproc [--seconds 5] [--repeats 3] [--json FILE]
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from benchmarks.lib.cli import Parser
from coordinator import errors
from coordinator.runtime import heap
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask, JoinRequest, ProposalIn
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from tasks.quadratic import QuadraticProposer

AGENTS = 64
PARAMS = {"blocks": 64, "dim": 4, "coupling": 0.3}


async def measure(mode: str, seconds: float) -> dict[str, Any]:
    svc = CoordinatorService(ServiceSettings(), MemoryStore(), ServiceMetrics(CollectorRegistry()))
    spec, join_token, _ = await svc.create(
        CreateTask(
            kind="quadratic",
            params=PARAMS,
            mode=mode,
            budgets={"rounds": 1_000_000},
            stop={"relative_gap": 0.0, "stall_rounds": 1_000_000},  # runs for the whole window
        )
    )
    heap.settle()  # as `blockopt serve` does once its app exists
    proposals, agent_cpu = 0, 0.0
    deadline = time.monotonic() + seconds

    async def agent(i: int) -> None:
        nonlocal proposals, agent_cpu
        joined = await svc.join(spec.id, join_token, JoinRequest(name=f"a{i}"))
        me = await svc.authenticate(spec.id, f"Bearer {joined.token}")
        proposer = QuadraticProposer()
        grant = None
        while time.monotonic() < deadline:
            if grant is None:
                try:
                    grant = await svc.lease(spec.id, me)
                except errors.BlockoptError:  # no free block right now
                    await asyncio.sleep(0.01)
                    continue
            started = time.process_time()
            draft = proposer.propose(grant.contract)
            assert draft is not None
            body = ProposalIn.answering(grant, draft, usage={"calls": 1, "model": "heuristic"})
            agent_cpu += time.process_time() - started
            view, _ = await svc.submit(spec.id, me, body, 5.0, next_lease=True)
            proposals += 1
            grant = view.next_lease

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(agent(i) for i in range(AGENTS)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    rounds = (await svc.store.get_runtime(spec.id)).round
    await svc.close()
    gc.unfreeze()
    return {
        "mode": mode,
        "proposals": proposals,
        "seconds": wall,
        "rounds": rounds,
        "proposals_per_s": proposals / wall,
        "cpu_us_per_proposal": 1e6 * cpu / proposals,
        "agents_us_per_proposal": 1e6 * agent_cpu / proposals,
        "service_us_per_proposal": 1e6 * (cpu - agent_cpu) / proposals,
    }


def main() -> None:
    ap = Parser(prog="service_inproc", description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=3, help="runs per mode, the modes alternated")
    ap.add_argument("--modes", default="async,rounds")
    ap.add_argument("--json", type=Path, metavar="PATH", help="write the rows here")
    args = ap.parse_args()
    if args.seconds <= 0 or args.repeats < 1:
        ap.error("--seconds must be positive and --repeats at least 1")
    modes = args.modes.split(",")
    if not set(modes) <= {"async", "rounds"}:
        ap.error(f"--modes: async and/or rounds, not {args.modes!r}")
    rows = []
    for repeat in range(args.repeats):
        for mode in modes:
            row = {"repeat": repeat, **asyncio.run(measure(mode, args.seconds))}
            rows.append(row)
            print(
                f"{mode:6s} #{repeat + 1}: {row['proposals_per_s']:7.0f} proposals/s, "
                f"{row['cpu_us_per_proposal']:4.0f} us CPU per proposal = service "
                f"{row['service_us_per_proposal']:4.0f} + agents {row['agents_us_per_proposal']:3.0f} "
                f"({row['rounds']} rounds)",
                flush=True,
            )
    for mode in modes:
        service = [r["service_us_per_proposal"] for r in rows if r["mode"] == mode]
        print(
            f"{mode}: service layer, median {statistics.median(service):.0f} us CPU per proposal "
            f"(min {min(service):.0f}, max {max(service):.0f}, n={len(service)})"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
