"""Issue 31's LNS2 goal: 8 virtual agents at 30 s against MAPF-LNS2 at 30 s, per instance and seed.

    PYTHONPATH=. .venv/bin/python $L/compare.py $L/lns2 $L/virtual-n8-*.json > $L/compare.txt

``$L/lns2``: mapf_sota's raw files (``MAP-K-sSEED.json``, LNS2's row); the rest: team_scaling's virtual files.
A virtual run given ``--stop-at SEED=<LNS2's sum of costs>`` ended once its head was at or below it (status
``target_reached``): the head never rises, so at 30 s it was there too; the table shows the head and when.
Every plan is read from our independent validator's row (``plan``), not from the coordinator.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any


def lns2_rows(folder: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    out = {}
    for f in sorted(folder.glob("*.json")):
        m = re.fullmatch(r"(.+)-(\d+)-s(\d+)\.json", f.name)
        if m is None:
            continue
        row = next(r for r in json.loads(f.read_text())["rows"] if r["solver"] == "lns2")
        out[(m[1], int(m[2]), int(m[3]))] = row
    return out


def team_runs(files: list[Path]) -> dict[tuple[str, int, int], dict[str, Any]]:
    out = {}
    for f in files:
        raw = json.loads(f.read_text())
        for run in raw["runs"]:
            out[(raw["config"]["map"], raw["config"]["robots"], run["seed"])] = run
    return out


def ours(run: dict[str, Any]) -> str:
    plan = run["plan"]
    text = f"{plan['sum_of_costs']:,}" if plan["valid"] else f"INVALID ({plan['conflicts']} conflicts)"
    if run["status"] == "target_reached":  # its last merge reached the target and ended the run
        return f"{text} at {run['curve'][-1][0]:.1f} s"
    return text


def main(argv: list[str]) -> int:
    theirs = lns2_rows(Path(argv[0]))
    team = team_runs([Path(a) for a in argv[1:]])
    instances = sorted({(m, k) for m, k, _ in theirs}, key=lambda mk: (mk[0], mk[1]))
    print("| instance | LB | MAPF-LNS2 30 s, seeds 1 / 2 / 3 | 8 agents (virtual) 30 s | ≤ LNS2 | median ≤ |")
    print("|---|---:|---|---|---:|---|")
    runs_met = runs = medians_met = 0
    for m, k in instances:
        seeds = sorted(s for mm, kk, s in theirs if (mm, kk) == (m, k))
        lb = theirs[(m, k, seeds[0])]["lower_bound"]
        lns2 = [theirs[(m, k, s)]["soc"] for s in seeds]
        done = [team[(m, k, s)] for s in seeds if (m, k, s) in team]
        cells = " / ".join(ours(team[(m, k, s)]) if (m, k, s) in team else "-" for s in seeds)
        met = sum(
            r["plan"]["valid"] and r["plan"]["sum_of_costs"] <= soc
            for r, soc in zip([team.get((m, k, s)) for s in seeds], lns2, strict=True)
            if r is not None
        )
        valid = [r["plan"]["sum_of_costs"] for r in done if r["plan"]["valid"]]
        median_met = len(valid) == len(seeds) and statistics.median(valid) <= statistics.median(lns2)
        runs, runs_met, medians_met = runs + len(done), runs_met + met, medians_met + median_met
        print(
            f"| {m} k={k} | {lb:,} | {' / '.join(f'{x:,}' for x in lns2)} | {cells} | {met} of {len(done)} |"
            f" {'yes' if median_met else 'no' if len(done) == len(seeds) else '-'} |"
        )
    print(
        f"\nmedian of 3 seeds at or below LNS2's median on {medians_met} of {len(instances)} instances;"
        f" runs at or below LNS2 at their seed: {runs_met} of {runs}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
