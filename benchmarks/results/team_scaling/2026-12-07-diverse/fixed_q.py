"""The samples reading at a fixed Q per seed (the Q the teams stopped at), one agent's runs of any length.

team_scaling's table takes Q from the one-agent runs it is given; the 8-agent runs here stopped at the Q of
the four 120 s runs, so a reading that adds one-agent runs of 180 s keeps that Q fixed instead.

Usage (from the checkout's root): PYTHONPATH=. fixed_q.py GOAL SEED=Q ... -- ONE.json ... -- TEAM.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.team_scaling import time_to
from blockopt.samples import TimedRun, stratified


def runs(files: list[str]) -> list[dict[str, Any]]:
    return [r for f in files for r in json.loads(Path(f).read_text())["runs"]]


def main(argv: list[str]) -> int:
    if argv.count("--") != 2:
        print("usage: fixed_q.py GOAL SEED=Q ... -- ONE.json ... -- TEAM.json ...", file=sys.stderr)
        return 2
    first, second = argv.index("--"), len(argv) - 1 - argv[::-1].index("--")
    goal = float(argv[0])
    q = {int(s): float(v) for s, v in (a.split("=") for a in argv[1:first])}
    one, team = runs(argv[first + 1 : second]), runs(argv[second + 1 :])
    strata = []
    for seed, target in sorted(q.items()):
        sides = [[r for r in rs if r["seed"] == seed] for rs in (one, team)]
        timed = [[TimedRun(time_to(r["curve"], target), float(r["seconds"])) for r in rs] for rs in sides]
        print(
            f"seed {seed}, Q {target:.0f}: one agent "
            + " / ".join(_at(t) for t in timed[0])
            + "; the team "
            + " / ".join(_at(t) for t in timed[1])
        )
        strata.append((timed[0], timed[1]))
    print(f"N = {team[0]['agents']}: {stratified(strata, goal)}")
    return 0


def _at(run: TimedRun) -> str:
    return f">{run.length:g}" if run.time is None else f"{run.time:.1f}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
