"""Speed-up at the team's own plan: for each team run, V = its head at the end of its horizon, TN(V) the first
time it was there, T1(V) the first time each one-agent run of the seed was there (the median of the runs;
'-' when a one-agent run never got there in its 120 s). S = T1(V) / TN(V). Q-based S (team_scaling table)
needs the team to reach one agent's 120 s plan; this says what a team's plan is worth in one agent's time.

Run: python THIS ONE_AGENT.json [ONE_AGENT.json ...] -- TEAM.json [TEAM.json ...]
"""

import json
import statistics
import sys

split = sys.argv.index("--")
singles = [r for f in sys.argv[1:split] for r in json.load(open(f))["runs"]]
teams = [r for f in sys.argv[split + 1 :] for r in json.load(open(f))["runs"]]


def first_at(curve: list[list[float]], value: float) -> float | None:
    return next((t for t, v in curve if v <= value), None)


print("agents seed  plan  TN(plan) s  T1(plan) s, each one-agent run  S at the team's plan")
for team in sorted(teams, key=lambda r: (r["agents"], r["seed"])):
    value = team["final"]
    tn = first_at(team["curve"], value)
    ones = [first_at(r["curve"], value) for r in singles if r["seed"] == team["seed"]]
    reached = [t for t in ones if t is not None]
    t1 = statistics.median(reached) if len(reached) == len(ones) and ones else None
    each = " / ".join("-" if t is None else f"{t:.1f}" for t in ones)
    s = "-" if t1 is None or not tn else f"{t1 / tn:.2f}"
    print(f"{team['agents']:>6} {team['seed']:>4} {value:>5.0f} {tn:>10.1f}  {each:<28} {s}")
