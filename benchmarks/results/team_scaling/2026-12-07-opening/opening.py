"""Where a team's opening goes: one replay (random-32-32-10, k = 300, a team's defaults as `team_scaling
virtual` sets them), then per bucket of virtual time the head, the commits, the coordinator's busy share and
how long answers waited for its core.

Usage: [COORDINATOR_SCALE=F] [PARAMS=JSON] [TAG=-x] opening.py AGENTS SEED SECONDS [BUCKET] > out.txt
COORDINATOR_SCALE: each coordinator call after creation books F x its CPU (0: a coordinator that costs
nothing); PARAMS: more task parameters (e.g. '{"level_merges": true}'); TAG names the JSON written into the
current directory."""

import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.lib import virtual_team as vt
from tasks.routing.task import RoutingTask


def config(agents: int, seed: int, seconds: float) -> vt.ReplayConfig:
    team = RoutingTask.team_defaults(agents, "async")
    params = {k: v for k, v in team.items() if k in RoutingTask.Params.model_fields}
    params |= {"map": "random-32-32-10", "robots": 300, "seed": seed}
    params |= json.loads(os.environ.get("PARAMS", "{}"))
    knobs = {k: v for k, v in team.items() if k in RoutingTask.ProposerParams.model_fields}
    return vt.ReplayConfig(
        kind="routing", params=params, agents=agents, seconds=seconds, seed=seed, knobs=knobs
    )


def scale_coordinator(factor: float) -> None:
    """Lab: book ``factor`` x each coordinator call's CPU on its core (0: one that costs nothing)."""
    finish = vt.ServerCore.finish

    def scaled(self: vt.ServerCore, cpu: float, what: str) -> float:
        return finish(self, cpu * factor if what != "create" else cpu, what)

    vt.ServerCore.finish = scaled  # type: ignore[method-assign]


def buckets(r: vt.ReplayResult, seconds: float, bucket: float) -> list[dict[str, Any]]:
    t0 = r.calls[0][1]  # creation starts the clock
    edges = [i * bucket for i in range(int(seconds / bucket) + 1)]
    rows = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        busy = sum(max(0.0, min(e - t0, hi) - max(b - t0, lo)) for _a, b, e, _w in r.calls[1:])
        waits = [b - a for a, b, _e, w in r.calls[1:] if w == "submit" and lo <= a - t0 < hi]
        rows.append({
            "from": lo, "to": hi, "head": next((v for t, v in reversed(r.commits) if t < hi), r.curve[0][1]),
            "commits": sum(lo <= t < hi for t, _v in r.commits), "answers": len(waits),
            "coordinator_busy": round(busy / bucket, 3),
            "answer_wait_ms": round(1000 * sum(waits) / len(waits), 1) if waits else None,
        })  # fmt: skip
    return rows


def main() -> None:
    if os.environ.get("COORDINATOR_SCALE"):
        scale_coordinator(float(os.environ["COORDINATOR_SCALE"]))
    agents, seed, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    bucket = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
    r = vt.replay(config(agents, seed, seconds))
    rows = buckets(r, seconds, bucket)
    print(
        f"agents {agents} seed {seed}: start-up {r.agent_start:.2f} s, creation {r.create_cpu:.2f} s, "
        f"verdicts {r.verdicts}, abandoned {r.abandoned}"
    )
    print(f"{'from':>5} {'to':>5} {'head':>6} {'commits':>7} {'answers':>7} {'busy':>5} {'wait ms':>8}")
    for x in rows:
        wait = "-" if x["answer_wait_ms"] is None else x["answer_wait_ms"]
        print(
            f"{x['from']:5.1f} {x['to']:5.1f} {x['head']:6.0f} {x['commits']:7d} {x['answers']:7d} "
            f"{x['coordinator_busy']:5.2f} {wait:>8}"
        )
    out = Path(f"opening-n{agents}-s{seed}-t{seconds:g}{os.environ.get('TAG', '')}.json")
    out.write_text(json.dumps({"rows": rows, "commits": r.commits, "calls": r.calls}))


if __name__ == "__main__":
    main()
