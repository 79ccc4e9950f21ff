"""Each run of team_scaling raw files: the head at fixed times, and when it first reached given sums of
costs and its seed's Q.   python3 THIS RAW.json..."""

import json
import sys

from lab import Q, at, to

for path in sys.argv[1:]:
    for run in json.load(open(path))["runs"]:
        c = run["curve"]
        heads = " ".join(f"@{t}:{at(c, t)}" for t in (3, 5, 8, 10, 15, 20, 30))
        times = " ".join(f"{q}:{to(c, q)}" for q in (7400, 7300, 7250, 7200, 7170))
        print(
            f"{path.rsplit('/', 1)[-1][:28]} N={run['agents']} s{run['seed']} busy={run['busy_fraction']:.0%}"
            f" {heads} | {times} Q:{to(c, Q[run['seed']])}"
        )
