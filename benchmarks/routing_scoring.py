"""Scoring speed: proposals scored per second by the incremental scorer vs a full re-validation.

Blocks of 10 robots in a 100-robot plan on random-32-32-10; each proposal is a
block re-planned by the LNS proposer (realistic paths). The incremental scorer
is ``RoutingTask.evaluate_change`` (occupancy index); the full re-validation
runs the independent validator on the whole changed plan.

    .venv/bin/python benchmarks/routing_scoring.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import check, make_task  # noqa: E402
from coordinator.engine.contract import contract_envelope  # noqa: E402
from coordinator.engine.records import Snapshot  # noqa: E402


def main() -> None:
    task = make_task("random-32-32-10", "random-1", 100, 10, exact_limit=0)
    state = task.initial_state()
    snap = Snapshot(0, task.objective(state), tuple([0] * task.n_blocks), state)
    proposer = task.make_proposer(task.ProposerParams(time_budget=0.2), seed=0)
    proposals = []
    for b in task.blocks():
        draft = proposer.propose(contract_envelope(task, snap, b))
        if draft is not None:
            proposals.append((b, task.validate(b, draft.value)))
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        for b, v in proposals:
            task.evaluate_change(state, {b: v})
    inc = reps * len(proposals) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for b, v in proposals:
        paths = list(state.paths)
        for r, p in zip(task.inst.blocks[b], v, strict=True):
            paths[r] = p
        check(task, [[task.grid.xy(c) for c in p] for p in paths])
    full = len(proposals) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for b, v in proposals:
        task.full_objective(task.apply(state, {b: v}).paths)
    rescore = len(proposals) / (time.perf_counter() - t0)
    print("| scorer | proposals/s | ratio vs full validation |")
    print("|---|---:|---:|")
    print(f"| incremental (occupancy index) | {inc:,.0f} | {inc / full:,.0f}x |")
    print(f"| full re-scoring with a fresh index | {rescore:,.0f} | {rescore / full:,.1f}x |")
    print(f"| full re-validation (independent validator) | {full:,.1f} | 1x |")
    print(
        f"({len(proposals)} proposals of 10 robots each in a 100-robot plan, {reps} repetitions for the incremental scorer)"
    )


if __name__ == "__main__":
    main()
