"""One agent on one block, in-process, several git refs side by side: the SOC over time, to read against
MAPF-LNS2's own log (``lns -s 1`` prints its cost at every iteration).

No coordinator and no HTTP: the proposer answers the task's contract, the task scores and applies the
proposal, and the next contract follows, until ``--limit`` seconds from the first plan's request. That is
the LNS alone, so the figures compare neighbourhood choices, not the service. Each ref is a ``git archive``
in a temporary directory; per seed the refs run one after the other, their order rotating, each in its own
process importing its tree. Per run: the SOC of the best collision-free plan at fixed times, the final SOC,
the proposals made and the LNS steps (``BlockSearch.try_group`` calls, the warm-up's excluded).

    .venv/bin/python benchmarks/routing_one_agent_trace.py --refs 83e4337 HEAD \\
        --only warehouse-10-20-10-2-1:200 --seeds 0 1 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIMES = (2, 5, 8, 10, 15, 20, 30)


def trace(tree: str, map_name: str, k: int, seed: int, limit: float, params: str = "{}") -> dict[str, Any]:
    """One run importing ``tree``; ``params``: further task parameters (JSON)."""
    sys.path.insert(0, tree)
    from benchmarks.routing_common import make_task
    from tasks.routing.repair import BlockSearch

    steps = 0
    try_group = BlockSearch.try_group

    def counted(self: Any, *args: Any) -> Any:
        nonlocal steps
        steps += 1
        return try_group(self, *args)

    warm = make_task("empty-16-16", "empty-16-16-random-1", 5, 1, exact_limit=0)  # compiles SIPP, untimed
    contract = {"block": 0, "data": warm.contract(warm.initial_state(), 0)}
    warm.make_proposer(warm.ProposerParams()).propose(contract)
    task = make_task(
        map_name, f"{map_name}-random-1", k, 1, **{"seed": seed, "exact_limit": 0, **json.loads(params)}
    )
    BlockSearch.try_group = counted  # type: ignore[method-assign]
    t0 = time.perf_counter()
    state = task.initial_state()
    proposer = task.make_proposer(task.ProposerParams(), seed=seed)
    points = [(time.perf_counter() - t0, state.soc, state.conflicts)]
    proposals = 0
    while (left := limit - (time.perf_counter() - t0)) > 0:
        contract = {"block": 0, "data": task.contract(state, 0), "budget": {"seconds": left}}
        draft = proposer.propose(contract)
        proposals += 1
        if draft is None:
            continue
        new = task.apply(state, {0: task.validate(0, draft.value)})
        if task.objective(new) < task.objective(state):
            state = new
            points.append((time.perf_counter() - t0, state.soc, state.conflicts))

    def best_at(t: float) -> int | None:
        return min((soc for at, soc, c in points if at <= t and c == 0), default=None)

    return {
        "final": state.soc if state.conflicts == 0 else None,
        "conflicts": state.conflicts,
        "lower_bound": task.lower_bound(),
        "proposals": proposals,
        "lns_steps": steps,
        "soc_at": {str(t): best_at(t) for t in TIMES if t <= limit},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", nargs="+", default=["HEAD"], help="git refs of this repository")
    ap.add_argument("--only", nargs="+", default=["warehouse-10-20-10-2-1:200"], metavar="MAP:K")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument(
        "--params", default="{}", help='further task parameters, JSON (e.g. \'{"initial": "shortest"}\')'
    )
    ap.add_argument("--json", default=None, help="write the raw rows here")
    ap.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        tree, map_name, k, seed, limit, params = args.worker
        print(json.dumps(trace(tree, map_name, int(k), int(seed), float(limit), params)))
        return 0
    try:
        extra = json.loads(args.params)
    except json.JSONDecodeError as exc:
        extra = exc
    if not isinstance(extra, dict):
        print(f"routing_one_agent_trace: --params wants a JSON object, got {args.params!r}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))  # (only now: a worker imports its own tree's benchmarks package)
    from benchmarks.refs import exported, instances

    rows: list[dict[str, Any]] = []
    todo = instances(args.only, "routing_one_agent_trace")
    with exported(args.refs, "routing_one_agent_trace") as trees:
        turn = 0
        for map_name, k in todo:
            for seed in args.seeds:
                order = args.refs[turn % len(args.refs) :] + args.refs[: turn % len(args.refs)]
                turn += 1
                for ref in order:
                    cmd = [sys.executable, __file__, "--worker", trees[ref], map_name, k, str(seed),
                           str(args.limit), args.params]  # fmt: skip
                    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
                    row = {"ref": ref, "instance": f"{map_name} k={k}", "seed": seed,
                           **json.loads(out.stdout.splitlines()[-1])}  # fmt: skip
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.json:
        raw = {"limit": args.limit, "refs": args.refs, "params": extra, "rows": rows}
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
