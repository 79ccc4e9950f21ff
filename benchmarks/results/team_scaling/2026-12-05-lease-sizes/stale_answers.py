"""Stale answers: how many written robots others changed since the lease, and how many were kept.

stale_answers.py AGENTS SEED SECONDS [PARAMS_JSON [KNOBS_JSON]]
"""

import json
import sys

from benchmarks.lib.virtual_team import ReplayConfig, replay
from tasks.routing import lns
from tasks.routing import rebase as rbmod
from tasks.routing.task import RoutingTask

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
knobs = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
bases = {}
orig = lns.RoutingProposer.propose


def propose(self, contract):
    d = orig(self, contract)
    if d is not None:
        g = self.grid
        robots = contract["data"]["robots"]
        w = {
            int(r["id"]): tuple(g.cell(x, y) for x, y in v)
            for r, v in zip(robots, d.value, strict=True)
            if v is not None
        }
        b = {int(r["id"]): tuple(g.cell(x, y) for x, y in r["path"]) for r in robots}
        bases[frozenset(w.items())] = b
    return d


lns.RoutingProposer.propose = propose
stats = []
orig_rb = rbmod.Rebaser.rebase


def rebase(self, state, robots, value, seconds, rng):
    written = {r: tuple(p) for r, p in zip(robots, value, strict=True) if p is not None}
    out = orig_rb(self, state, robots, value, seconds, rng)
    base = bases.get(frozenset(written.items()))
    if base is None:
        stats.append(None)
        return out
    kept = {} if out is None else {r for r, p in zip(robots, out, strict=True) if p is not None}
    changed = [r for r in written if tuple(state.paths[r]) != base[r]]
    others_changed = sum(1 for r in base if tuple(state.paths[r]) != base[r])
    stats.append((len(written), len(kept), len(changed), others_changed, len(base)))
    return out


rbmod.Rebaser.rebase = rebase
team = RoutingTask.team_defaults(agents, "async")
params = {"blocks": team["blocks"], "map": "random-32-32-10", "robots": 300, "seed": seed} | extra
r = replay(ReplayConfig(kind="routing", params=params, agents=agents, seconds=secs, seed=seed, knobs=knobs))
print(
    f"N={agents} seed={seed} t={secs} {extra} {knobs} end={r.curve[-1][1]} proposals={r.proposals}"
    f" accepted={r.accepted} abandoned={r.abandoned} verdicts={r.verdicts}"
    f" coord={r.coordinator_cpu:.1f} agentcpu={sum(r.agent_cpu):.0f}"
)


def at(t):
    v = r.curve[0][1]
    for x, y in r.commits:
        if x <= t:
            v = y
    return v


print("SOC at", {t: at(t) for t in (2, 4, 6, 8, 10, 15, 20, 30) if t <= secs})
ok = [x for x in stats if x]
print(f"rebases={len(stats)} matched={len(ok)}")
if ok:
    s = [sum(x[i] for x in ok) for i in range(5)]
    print(
        f"written={s[0]} kept={s[1]} written_changed_by_others={s[2]}"
        f" lease_robots_changed_by_others={s[3]} of lease={s[4]}"
    )
