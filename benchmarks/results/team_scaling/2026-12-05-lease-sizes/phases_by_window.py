"""Per time window of a virtual replay: answers by verdict code, leases that found nothing, gain merged.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS [PARAMS_JSON [KNOBS_JSON]]"""

import collections
import json
import os
import sys

from benchmarks.lib import virtual_team as vt
from tasks.routing import opening
from tasks.routing.task import RoutingTask

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
knobs = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
ev = []
os_ = vt.Replay._on_submit


async def on_submit(self, agent, at, body):
    before = dict(self.verdicts)
    await os_(self, agent, at, body)
    diff = [k for k, v in self.verdicts.items() if v != before.get(k, 0)]
    ev.append((at, diff[0] if diff else "?"))


vt.Replay._on_submit = on_submit
oa = vt.Replay._on_abandon


async def on_abandon(self, agent, at, lease, took):
    ev.append((at, "nothing"))
    await oa(self, agent, at, lease, took)


vt.Replay._on_abandon = on_abandon
closed_at: list[float] = []
ol = opening.Opening.leased


def leased(self, block):
    was = self.open
    ol(self, block)
    if was and not self.open:
        closed_at.append(ev[-1][0] if ev else 0.0)


opening.Opening.leased = leased
team = RoutingTask.team_defaults(agents, "async")
params = {"blocks": team["blocks"], "map": "random-32-32-10", "robots": 300, "seed": seed} | extra
r = vt.replay(
    vt.ReplayConfig(kind="routing", params=params, agents=agents, seconds=secs, seed=seed, knobs=knobs)
)
step = float(os.environ.get("STEP", "4"))
t = 0.0
print(f"N={agents} seed={seed} {extra} {knobs}")
print("opening closed at", [round(x, 1) for x in closed_at] or "never (or no opening)")
while t < secs:
    w = [k for a, k in ev if t <= a < t + step]
    c = [y for x, y in r.commits if x < t] or [r.curve[0][1]]
    c2 = [y for x, y in r.commits if x < t + step] or [r.curve[0][1]]
    print(
        f"[{t:4.0f},{t + step:4.0f}) leases={len(w)} {dict(collections.Counter(w))}"
        f" gain={c[-1] - c2[-1]:.0f} soc={c2[-1]:.0f}"
    )
    t += step
