"""The opening pairs side by side: per seed and arm, the head at 2-6 s of every run, the stale share and the
coordinator's busy share, then each arm's median head per mark and how many pairs the focus led.

    PYTHONPATH=. .venv/bin/python $P/opening_pairs.py $P     # reads $P/opening-{base,focus}-n16-t6-s*-r*.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from benchmarks.team_scaling import value_at

MARKS = (2.0, 3.0, 4.0, 5.0, 6.0)


def main() -> None:
    folder = Path(sys.argv[1])
    heads: dict[tuple[str, int, str], list[float]] = {}
    for arm in ("base", "focus"):
        for f in sorted(folder.glob(f"opening-{arm}-n16-t6-s*-r*.json")):
            (run,) = json.loads(f.read_text())["runs"]
            heads[(arm, run["seed"], f.stem.rsplit("-", 1)[1])] = [value_at(run["curve"], t) for t in MARKS]
            stale = sum(v for k, v in run["rejected_by_reason"].items() if k.startswith("stale"))
            print(
                f"{arm:5s} seed {run['seed']} {f.stem.rsplit('-', 1)[1]}: "
                + " / ".join(f"{v:.0f}" for v in heads[(arm, run["seed"], f.stem.rsplit("-", 1)[1])])
                + f"  stale {stale} of {run['proposals']}, coordinator busy {run['busy_fraction']:.0%}"
            )
    for i, t in enumerate(MARKS):
        arms = {a: [v[i] for (arm, _, _), v in heads.items() if arm == a] for a in ("base", "focus")}
        pairs = [
            (v[i], heads[("focus", s, r)][i])
            for (a, s, r), v in heads.items()
            if a == "base"
            if ("focus", s, r) in heads
        ]
        led = sum(f < b for b, f in pairs)
        print(
            f"at {t:g} s: median base {statistics.median(arms['base']):.0f}, focus "
            f"{statistics.median(arms['focus']):.0f}; focus lower in {led} of {len(pairs)} pairs"
        )


if __name__ == "__main__":
    main()
