"""The late phase of each run: when the head first reached 7,200, and how long it then took to gain 50 and
70 more; the head at 10, 15 and 20 s. Reads the runs of team_scaling raw files (16 agents) and the commits
files that variants.py writes.   python3 THIS RAW.json... COMMITS.json..."""

import json
import sys


def to(curve, q):
    return next((x for x, y in curve if y <= q), None)


def at(curve, t):
    return next((y for x, y in reversed(curve) if x <= t), None)


def row(name, curve):
    t = to(curve, 7200)
    gains = []
    for d in (50, 70):
        u = to(curve, 7200 - d)
        gains.append(f"+{d} in {'-' if u is None or t is None else round(u - t, 1)}")
    heads = " ".join(f"@{s} {at(curve, s)}" for s in (10, 15, 20))
    return f"{name:34s} 7,200 at {t and round(t, 1)}  {'  '.join(gains)}  head {heads}"


for path in sys.argv[1:]:
    data = json.load(open(path))
    name = path.rsplit("/", 1)[-1][:-5]
    if isinstance(data, dict):
        for run in data["runs"]:
            if run["agents"] == 16:
                print(row(f"{name[:24]} s{run['seed']}", run["curve"]))
    else:
        print(row(name, data))
