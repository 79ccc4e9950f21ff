"""How long a regrouping takes (the engine runs it inside a round), against the round's own scoring time.

Builds a plan the way a run does (three rounds of the heuristic on every
block), then times ``holding_up`` (the weights) and ``regroup`` (the swap
search), and an engine round that scores one proposal per block on that plan.

    .venv/bin/python benchmarks/routing_regroup.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordinator.engine.contract import contract_envelope  # noqa: E402
from coordinator.engine.records import Proposal  # noqa: E402
from coordinator.engine.rounds import RoundEngine  # noqa: E402
from tasks.registry import create_task  # noqa: E402
from tasks.routing.regroup import holding_up, regroup  # noqa: E402

CASES = ((100, 3), (300, 6), (450, 12))


def main() -> None:
    print("robots blocks  weight pairs  weights s  regroup s  engine round s  regroup / round")
    for robots, blocks in CASES:
        task = create_task(
            "routing", {"map": "random-32-32-10", "robots": robots, "blocks": blocks, "exact_limit": 0}
        )
        engine = RoundEngine(task)
        snap = engine.initial_snapshot()
        proposer = task.make_proposer(task.ProposerParams(time_budget=0.3), seed=1)
        round_s = 0.0
        for r in range(3):
            drafts = [proposer.propose(contract_envelope(task, snap, b, {})) for b in task.blocks()]
            proposals = [
                Proposal(
                    id=f"{r}-{d.block}",
                    agent="a",
                    block=d.block,
                    value=d.value,
                    base_version=snap.version,
                    predicted_improvement=d.predicted_improvement,
                )
                for d in drafts
                if d is not None
            ]
            t0 = time.perf_counter()
            snap = engine.run_round(snap, proposals, r).snapshot
            round_s = time.perf_counter() - t0
        state = snap.state
        t0 = time.perf_counter()
        weights = holding_up(task.grid, task.inst.starts, task.inst.goals, state.paths, state.index)
        t1 = time.perf_counter()
        regroup(state.blocks, weights, attempt=5)
        t2 = time.perf_counter()
        print(
            f"{robots:6d} {blocks:6d} {len(weights):13d} {t1 - t0:10.3f} {t2 - t1:10.3f} {round_s:15.3f} "
            f"{(t2 - t0) / round_s if round_s else float('nan'):16.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
