"""Stale answers (head paths, leased robots, value) of a 16-agent virtual replay, pickled
(2026-12-05-lease-sizes's script with the team's knobs and the rebase's scan passed on).

capture_rebases.py SECONDS OUT
"""

import pickle
import sys

from benchmarks.lib.virtual_team import ReplayConfig, replay
from tasks.routing import rebase as rbmod

cap = []
orig = rbmod.Rebaser.rebase


def rebase(self, state, robots, value, seconds, rng, *rest):
    if len(cap) < 150:
        cap.append((state.paths, tuple(robots), value))
    return orig(self, state, robots, value, seconds, rng, *rest)


rbmod.Rebaser.rebase = rebase
params = {"blocks": 17, "map": "random-32-32-10", "robots": 300, "seed": 2}
knobs = {"stop_after": 300}  # the team's, as `team_scaling virtual` sets them (without: no answer rebased)
seconds = float(sys.argv[1])
r = replay(ReplayConfig(kind="routing", params=params, agents=16, seconds=seconds, seed=2, knobs=knobs))
pickle.dump(cap, open(sys.argv[2], "wb"))
print(len(cap))
