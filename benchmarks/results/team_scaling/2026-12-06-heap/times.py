"""Each run of team_scaling raw files: the head at fixed times, and when it first reached given sums of
costs and its seed's Q.   python3 THIS RAW.json..."""

import json
import sys

Q = {1: 7152, 2: 7127, 3: 7118}  # BENCHMARKS "Team scaling": one agent at 120 s, median of 3 runs per seed


def to(curve: list, q: float) -> float | None:
    return next((round(x, 1) for x, y in curve if y <= q), None)


def at(curve: list, t: float) -> float | None:
    return next((y for x, y in reversed(curve) if x <= t), None)


for path in sys.argv[1:]:
    for run in json.load(open(path))["runs"]:
        c = run["curve"]
        heads = " ".join(f"@{t}:{at(c, t)}" for t in (3, 5, 8, 10, 15, 20, 30))
        times = " ".join(f"{q}:{to(c, q)}" for q in (7400, 7300, 7250, 7200, 7170))
        print(
            f"{path.rsplit('/', 1)[-1][:28]} N={run['agents']} s{run['seed']} busy={run['busy_fraction']:.0%}"
            f" {heads} | {times} Q:{to(c, Q[run['seed']])}"
        )
