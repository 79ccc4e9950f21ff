"""Two lanes' runs side by side: per team size and seed, each tree's head at marks from the run's start and
from the agents' join, the coordinator's busy share, CPU a commit and an answer, answers, merges, refusals;
then the medians over the seeds.

    PYTHONPATH=. .venv/bin/python $S/side.py $S/base-844e1b4-n816-t20-s123.json \
        $S/compiled-8cd5f61-n816-t20-s123.json
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

from benchmarks.team_scaling import value_at

MARKS = (2.0, 5.0, 10.0, 15.0, 20.0)
FROM_JOIN = (1.0, 3.0, 8.0)


def row(run: dict[str, Any]) -> dict[str, float]:
    joined = run["create_cpu"] + run["agent_start"]
    out = {f"{t:g} s": value_at(run["curve"], t) for t in MARKS}
    out |= {f"join+{t:g} s": value_at(run["curve"], joined + t) for t in FROM_JOIN}
    calls = run["coordinator_by_call"]
    return out | {
        "busy %": 100 * run["busy_fraction"],
        "ms a commit": run["cpu_per_commit_ms"],
        "ms an answer": run["cpu_per_proposal_ms"],
        "submit ms": 1000 * calls["submit"]["cpu_s"] / max(1, calls["submit"]["calls"]),
        "answers": run["proposals"],
        "merged": run["accepted"],
        "refused": sum(run["rejected_by_reason"].values()),
        "joined at": joined,
    }


def main(paths: list[str]) -> None:
    lanes = [{(r["agents"], r["seed"]): row(r) for r in json.load(open(p))["runs"]} for p in paths]
    names = [p.rsplit("/", 1)[-1].split("-n")[0] for p in paths]
    for n in sorted({k[0] for k in lanes[0]}):
        print(f"N = {n}")
        seeds = sorted(s for a, s in lanes[0] if a == n)
        for field in lanes[0][(n, seeds[0])]:
            cells = []
            for name, lane in zip(names, lanes, strict=True):
                values = [lane[(n, s)][field] for s in seeds if (n, s) in lane]
                shown = " / ".join(f"{v:,.1f}" if v < 100 else f"{v:,.0f}" for v in values)
                cells.append(f"{name}: {shown} (median {statistics.median(values):,.1f})")
            print(f"  {field:13s} " + "   ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
