"""SOC at given times and times to targets of several raw files, beside the one-agent curves."""

import json
import sys


def first(c, q):
    for x, y in c:
        if y <= q:
            return x
    return None


def at(c, t):
    v = c[0][1]
    for x, y in c:
        if x <= t:
            v = y
    return v


one = json.load(open("benchmarks/results/team_scaling/virtual-overlap-random-k300-one-agent-s123x3.json"))
targets = (7400, 7300, 7250, 7200, 7170)
ones = {r["seed"]: r["curve"] for r in one["runs"][:3]}
files = sys.argv[1:]
runs = {}
for f in files:
    for r in json.load(open(f))["runs"]:
        runs.setdefault((r["agents"], r["seed"]), []).append((f.split("/")[-1][:28], r))
for (n, s), lst in sorted(runs.items()):
    for name, r in lst:
        c = r["curve"]
        ts = [first(c, q) for q in targets]
        print(
            f"N={n:2d} s{s} {name:28s} @5 {at(c, 5):.0f} @10 {at(c, 10):.0f}"
            f" @15 {at(c, 15):.0f} @20 {at(c, 20):.0f} | to "
            + " ".join(
                f"{q}:{t:.1f}({first(ones[s], q) / t:.1f}x)" if t else f"{q}:-"
                for q, t in zip(targets, ts, strict=True)
            )
        )
