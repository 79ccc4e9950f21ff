"""How many paths a proposal changes, with and without ``BlockSearch.put_back``, side by side.

One agent, one block holding every robot (the first k robots of the map's ``random-1`` scenario), a run
of ``--proposals`` proposals of 0.5 s each from the task's first plan, once with put_back and once
without (the same seeds; per seed the run without comes first). Per proposal: paths changed, how many of
them changed cost, and the gain. With salted SIPP ties most of the changed paths are equal-cost moves
along the LNS's plateau; every changed path costs the coordinator's scoring and widens the proposal's
footprint.

    .venv/bin/python benchmarks/routing_put_back.py --json benchmarks/results/put_back/changed.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import make_task  # noqa: E402
from tasks.routing import repair  # noqa: E402


def run(spec: str, seed: int, proposals: int, put_back: bool) -> list[dict[str, int]]:
    map_name, k = spec.split(":")
    task = make_task(map_name, f"{map_name}-random-1", int(k), 1)
    state = task.initial_state()
    proposer = task.make_proposer(task.ProposerParams(time_budget=0.5), seed=seed)
    original = repair.BlockSearch.put_back
    if not put_back:
        repair.BlockSearch.put_back = lambda self, before: 0  # type: ignore[method-assign,assignment]
    rows = []
    try:
        for _ in range(proposals):
            contract = {"block": 0, "data": task.contract(state, 0), "budget": {"seconds": 0.5}}
            draft = proposer.propose(contract)
            if draft is None:
                continue
            value = task.validate(0, draft.value)
            old, new = task._changed(state, {0: value})
            after = task.apply(state, {0: value})
            rows.append({
                "changed": len(new),
                "cost_changed": sum(1 for r in new if len(new[r]) != len(old[r])),
                "gain": state.soc - after.soc,
            })  # fmt: skip
            state = after
    finally:
        repair.BlockSearch.put_back = original  # type: ignore[method-assign]
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", default=["warehouse-10-20-10-2-1:200", "random-32-32-10:300"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    ap.add_argument("--proposals", type=int, default=6)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    out: list[dict[str, Any]] = []
    print("| instance | put_back | proposals | paths changed (median) | of them cost changed | gain |")
    print("|---|---|---:|---:|---:|---:|")
    for spec in args.only:
        rows: dict[bool, list[dict[str, int]]] = {False: [], True: []}
        for seed in args.seeds:
            for flag in (False, True):
                got = run(spec, seed, args.proposals, flag)
                rows[flag] += got
                out.append({"instance": spec, "put_back": flag, "seed": seed, "proposals": got})
        for flag, runs in rows.items():
            med = {key: statistics.median(r[key] for r in runs) for key in ("changed", "cost_changed")}
            print(f"| {spec} | {'on' if flag else 'off'} | {len(runs)} | {med['changed']:g} |"
                  f" {med['cost_changed']:g} | {sum(r['gain'] for r in runs)} |", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
