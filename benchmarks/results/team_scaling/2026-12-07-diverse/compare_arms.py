"""Arms of 16 agents against the tree as it ships, from their runs' times to one target per seed.

The target of a seed is the highest sum of costs any run of the seed (every arm) had at 20 s, so that every
run reached it and every time is known; the arm's runs are read against the base runs as samples
(``blockopt.samples``: "S >= 1", the arm faster than the base, above, below or undecided).

Usage (from the checkout's root): PYTHONPATH=. compare_arms.py BASE.json ... -- ARM.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.team_scaling import time_to, value_at
from blockopt.samples import TimedRun, stratified


def runs(files: list[str]) -> list[dict]:  # type: ignore[type-arg]
    return [r for f in files for r in json.loads(Path(f).read_text())["runs"]]


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: compare_arms.py BASE.json ... -- ARM.json ...", file=sys.stderr)
        return 2
    cut = argv.index("--")
    base, arm = runs(argv[:cut]), runs(argv[cut + 1 :])
    strata = []
    for seed in sorted({r["seed"] for r in base}):
        mine = [r for r in base if r["seed"] == seed]
        theirs = [r for r in arm if r["seed"] == seed]
        target = max(value_at(r["curve"], 20.0) for r in mine + theirs)
        times = [[time_to(r["curve"], target) for r in rs] for rs in (mine, theirs)]
        print(
            f"seed {seed}: target {target:.0f}; base reached it at "
            + " / ".join(f"{t:.1f}" for t in times[0])
            + " s, the arm at "
            + " / ".join(f"{t:.1f}" for t in times[1])
            + " s"
        )
        strata.append(tuple([TimedRun(t, 20.0) for t in ts] for ts in times))
    print(f"the arm against the base: {stratified(strata, 1.0)}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
