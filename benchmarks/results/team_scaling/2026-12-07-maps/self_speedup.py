"""One agent against itself: two one-agent runs per seed, each run's time to the pooled Q (the higher of the
two runs' objectives at 120 s, as `team_scaling table --one-agent-repeats` takes it) and their ratio.
Usage: self_speedup.py RUN1.json RUN2.json"""

import json
import sys


def first(curve: list, q: float) -> float | None:
    return next((t for t, v in curve if v <= q), None)


runs = [{r["seed"]: r for r in json.load(open(path))["runs"]} for path in sys.argv[1:3]]
for seed in sorted(runs[0]):
    a, b = runs[0][seed], runs[1][seed]
    q = max(a["final"], b["final"])
    ta, tb = first(a["curve"], q), first(b["curve"], q)
    ratio = ta / tb if ta and tb else None
    print(
        f"seed {seed}: Q {q:.0f}; run 1 {a['final']:.0f}, at Q after {ta:.1f} s; run 2 {b['final']:.0f}, "
        f"after {tb:.1f} s; run 1 / run 2 {ratio:.2f}, run 2 / run 1 {1 / ratio:.2f}"
    )
