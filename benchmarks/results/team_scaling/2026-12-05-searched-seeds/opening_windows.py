"""Per window of a virtual replay: the coordinator's busy share, how long requests waited for it, its CPU by
call, the verdicts, and the head. Shows where the opening is bound by the coordinator.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS   (STEP=1 by default)"""

import asyncio
import collections
import os
import sys

from benchmarks.lib import virtual_team as vt
from tasks.routing.task import RoutingTask

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
events: list[tuple[float, str]] = []
submit, abandon = vt.Replay._on_submit, vt.Replay._on_abandon


async def on_submit(self, agent, at, body):
    before = dict(self.verdicts)
    await submit(self, agent, at, body)
    changed = [k for k, v in self.verdicts.items() if v != before.get(k, 0)]
    events.append((at, changed[0] if changed else "?"))


async def on_abandon(self, agent, at, lease, took):
    events.append((at, "found nothing"))
    await abandon(self, agent, at, lease, took)


vt.Replay._on_submit, vt.Replay._on_abandon = on_submit, on_abandon
params = {"blocks": RoutingTask.team_defaults(agents, "async")["blocks"], "map": "random-32-32-10",
          "robots": 300, "seed": seed}
replay = vt.Replay(vt.ReplayConfig(kind="routing", params=params, agents=agents, seconds=secs, seed=seed))
r = asyncio.run(replay.run())
t0, step = replay.created_at, float(os.environ.get("STEP", "1"))
print(f"N={agents} seed={seed}: creation {r.create_cpu:.2f} s, agents join {r.agent_start:.2f} s after it")


def head(t):
    return next((y for x, y in reversed(r.commits) if x <= t), None)


t = 0.0
while t < secs:
    lo, hi = t0 + t, t0 + t + step
    calls = [c for c in r.calls[1:] if lo <= c[1] < hi]
    busy = sum(min(e, hi) - max(b, lo) for _, b, e, _ in r.calls[1:] if e > lo and b < hi)
    waits = [b - a for a, b, _, _ in calls]
    cpu = collections.Counter()
    for _, b, e, what in calls:
        cpu[what] += e - b
    n = collections.Counter(what for *_, what in calls)
    verdicts = collections.Counter(k for a, k in events if lo <= a < hi)
    per = {k: f"{n[k]} x {1000 * cpu[k] / n[k]:.1f} ms" for k in n if k != "tick"}
    wait = 1000 * sum(waits) / max(1, len(waits))
    print(f"{t:4.1f}-{t + step:4.1f} s  busy {busy / step:4.0%}  wait {wait:5.1f} ms"
          f" (max {1000 * max(waits or [0]):5.1f})  {per}  {dict(verdicts)}  head {head(t + step)}")
    t += step
