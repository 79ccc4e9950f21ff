"""Per-proposal overhead at density, before/after the incremental paths, measured side by side in one run.

On warehouse-10-20-10-2-1 with 400 robots (scenario random-1, 6 blocks), a sequence of rounds in which
``--merged`` proposals each change ``--changed`` robots of their block, and then one block's contract is
built and read by its agent (each block comes back every 6 rounds). Per step, both ways on the same state:

- contract building: a fresh per-robot geometry (every cell of the plan converted, the old cost) vs the
  task's cache (only the changed paths);
- the agent's reservation table: rebuilt from the whole contract vs updated for the robots that changed;
- the agent's repair scoring: the block's occupancy index rebuilt per step vs the incremental update.

    .venv/bin/python benchmarks/routing_overhead.py --json benchmarks/results/routing_overhead.json
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import make_task  # noqa: E402
from tasks.routing.contract import GeometryCache, build_contract  # noqa: E402
from tasks.routing.lns import table_from_contract  # noqa: E402
from tasks.routing.occupancy import Path as RPath  # noqa: E402

T = TypeVar("T")


def _detour(task: Any, robot: int, path: RPath, rng: random.Random) -> RPath:
    """The same route with a wait inserted somewhere (a changed, legal path)."""
    i = rng.randrange(len(path))
    return path[: i + 1] + path[i:]


def _timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--map", default="warehouse-10-20-10-2-1")
    ap.add_argument("--robots", type=int, default=400)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--merged", type=int, default=3, help="proposals merged per round")
    ap.add_argument("--changed", type=int, default=8, help="robots re-planned per proposal")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rng = random.Random(0)
    task = make_task(args.map, f"{args.map}-random-1", args.robots, args.blocks)
    t0 = time.perf_counter()
    state = task.initial_state()
    initial_s = time.perf_counter() - t0
    proposer = task.make_proposer(task.ProposerParams(), seed=0)
    for b in range(task.n_blocks):  # every agent has seen its block once
        proposer._table(b, task.contract(state, b))
    steps: list[dict[str, float]] = []
    for step in range(args.steps):
        # a round that merges `--merged` proposals, each re-planning `--changed` robots of its block
        changes = {}
        for moved in rng.sample(range(task.n_blocks), args.merged):
            robots = state.blocks[moved]
            touched = set(rng.sample(robots, min(args.changed, len(robots))))
            changes[moved] = tuple(
                _detour(task, r, state.paths[r], rng) if r in touched else state.paths[r] for r in robots
            )
        state = task.apply(state, changes)
        block = step % task.n_blocks
        inst, robots = task.inst, state.blocks[block]
        # a full collection before each timed piece: a generation-2 pause (timed on its own) would
        # otherwise land on whichever piece happens to allocate past the threshold
        gc_s = _timed(gc.collect)[1]
        geometry = GeometryCache(task.grid.width)
        fresh, contract_fresh = _timed(
            build_contract, inst, state.paths, robots, task.p.margin, task.weight, geometry
        )
        gc.collect()
        data, contract_inc = _timed(task.contract, state, block)
        assert data["reservations"]["moves"] == fresh["reservations"]["moves"]
        gc.collect()
        rebuilt, table_rebuild = _timed(table_from_contract, task.grid, data)
        gc.collect()
        kept, table_inc = _timed(proposer._table, block, data)
        assert kept.vert == rebuilt.vert and kept.park == rebuilt.park
        steps.append(
            {
                "contract_fresh_s": contract_fresh,
                "contract_incremental_s": contract_inc,
                "table_rebuild_s": table_rebuild,
                "table_incremental_s": table_inc,
                "full_gc_s": gc_s,
                "reservations": data["reservations"]["size"],
            }
        )
    med = {k: statistics.median(s[k] for s in steps) for k in steps[0]}
    ratio_c = med["contract_fresh_s"] / med["contract_incremental_s"]
    ratio_t = med["table_rebuild_s"] / med["table_incremental_s"]
    print(f"{args.map} k={args.robots}, {task.n_blocks} blocks, {args.steps} steps (median per step)")
    print(f"  initial plan (prioritized, once): {initial_s:.2f} s; contract {med['reservations']:.0f} cells")
    print(
        f"  contract building : fresh {1000 * med['contract_fresh_s']:.1f} ms,"
        f" incremental {1000 * med['contract_incremental_s']:.1f} ms, ratio {ratio_c:.1f}x"
    )
    print(
        f"  reservation table : rebuild {1000 * med['table_rebuild_s']:.1f} ms,"
        f" incremental {1000 * med['table_incremental_s']:.1f} ms, ratio {ratio_t:.1f}x"
    )
    print(f"  a full garbage collection at this heap size: {1000 * med['full_gc_s']:.1f} ms")
    if args.json:
        out = {"meta": vars(args) | {"initial_s": initial_s}, "median": med, "steps": steps}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
