"""The round engine's steps for 64 proposals on quadratic-64 (every pair coupled), old and new side by side.

One round's proposals (each block's exact minimizer from the same snapshot, all improving) are timed step by
step, each step's old and new form alternated in one process, median of ``--repeats``:

- candidate pairs: the footprint index (``dense=False``: 129,024 incidences for 2,016 pairs) against the
  incidence-matrix product (``dense=True``, what ``candidate_pairs`` now picks here);
- the exact check of a 64-block combination (``evaluate_change``): block by block against one product;
- the interference graph as ``RoundEngine._interference_graph`` builds it in networkx (engine/rounds.py, not
  changed here), for scale.

    .venv/bin/python benchmarks/engine_round_steps.py [--repeats 30] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordinator.engine.interference import candidate_pairs  # noqa: E402
from tasks.quadratic import QuadraticParams, QuadraticProposer, QuadraticTask  # noqa: E402


def timed(fn: Callable[[], Any], repeats: int) -> float:
    """Median seconds of ``fn`` over ``repeats`` calls."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
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

    rows: dict[str, float] = {}
    for name, fn in [
        ("candidate pairs, index (before)", lambda: candidate_pairs(blocks, footprints, dense=False)),
        (
            "candidate pairs, incidence product (after)",
            lambda: candidate_pairs(blocks, footprints, dense=True),
        ),
        ("exact check of 64 blocks, block by block (before)", blockwise),
        ("exact check of 64 blocks, one product (after)", lambda: task.evaluate_change(state, values)),
        (
            "interactions of the 2,016 pairs (task.interactions)",
            lambda: task.interactions(state, items, pairs, f0),
        ),
        ("networkx interference graph incl. interactions (rounds.py)", graph),
    ]:
        rows[name] = timed(fn, args.repeats)
    load = os.getloadavg()
    print(
        f"quadratic-64, 64 proposals, {len(pairs)} pairs; median of {args.repeats}; "
        f"load average {load[0]:.2f}"
    )
    for name, seconds in rows.items():
        print(f"{name:62s} {1e3 * seconds:8.2f} ms   {1e6 * seconds / 64:8.1f} us per proposal")
    if args.json:
        args.json.write_text(json.dumps({"load": load, "repeats": args.repeats, "seconds": rows}, indent=1))


if __name__ == "__main__":
    main()
