"""Engine overhead per round (excluding objective evaluations) and rounds/s, n = 64 blocks.

Both merge policies run side by side in one process on the same instance, so
the ratio between them is meaningful on a noisy machine even when absolute
times are not. Usage: python benchmarks/engine_overhead.py [--blocks 64] [--rounds 30]
"""

from __future__ import annotations

import argparse
import statistics
import time

from coordinator.engine.rounds import EngineSettings
from coordinator.runtime.inproc import RunSettings, run_inproc
from tasks.quadratic import QuadraticParams, QuadraticProposerParams, QuadraticTask


def measure(policy: str, params: QuadraticParams, rounds: int) -> dict[str, float]:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--dim", type=int, default=4)
    ap.add_argument("--coupling", type=float, default=0.3)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    params = QuadraticParams(blocks=args.blocks, dim=args.dim, coupling=args.coupling, seed=1)
    print(
        f"quadratic n={args.blocks} d={args.dim} coupling={args.coupling}, {args.blocks} agents, "
        f"up to {args.rounds} rounds per policy"
    )
    rows = {p: measure(p, params, args.rounds) for p in ("independent", "checked")}
    cols = [
        "rounds",
        "status",
        "rounds_per_s",
        "engine_ms_median",
        "engine_ms_p90",
        "eval_ms_median",
        "edges_median",
        "checks_median",
        "rel_gap",
    ]
    print(f"{'policy':<12}" + "".join(f"{c:>17}" for c in cols))
    for policy, row in rows.items():
        cells = "".join(f"{row[c]:>17.4g}" if isinstance(row[c], float) else f"{row[c]!s:>17}" for c in cols)
        print(f"{policy:<12}{cells}")
    ratio = rows["checked"]["engine_ms_median"] / rows["independent"]["engine_ms_median"]
    print(f"checked / independent engine overhead per round: {ratio:.2f}x")


if __name__ == "__main__":
    main()
