"""cProfile of the coordinator's calls alone in a virtual replay (switched on inside ``Replay.serve``, so no
agent's search is in it). Run from a checkout:
[PARAMS=JSON] PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS (PARAMS: more task parameters, e.g.
'{"level_merges": true}')."""

import cProfile
import json
import os
import pstats
import sys

from benchmarks.lib import virtual_team as vt
from tasks.routing.task import RoutingTask

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
since = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
profile = cProfile.Profile()
serve = vt.Replay.serve


async def profiled_serve(self, arrival, what, call):
    async def wrapped():
        profile.enable()
        try:
            return await call()
        finally:
            profile.disable()

    late = self.created_at and arrival - self.created_at >= since
    return await serve(self, arrival, what, wrapped if late else call)


vt.Replay.serve = profiled_serve
team = RoutingTask.team_defaults(agents, "async")
params = {"blocks": team["blocks"], "map": "random-32-32-10", "robots": 300, "seed": seed}
params |= json.loads(os.environ.get("PARAMS", "{}"))
# every kind call on the loop (no worker threads), so that the profile sees all of it; the team's knobs as
# ``team_scaling virtual`` sets them (``stop_after`` from 2026-12-06 on; trees before had none)
knobs = {k: v for k, v in team.items() if k == "stop_after"}
config = vt.ReplayConfig(
    kind="routing",
    params=params,
    agents=agents,
    seconds=secs,
    seed=seed,
    settings={"inline_step_ms": 1e9},
    knobs=knobs,
)
r = vt.replay(config)
print("coordinator cpu", r.coordinator_cpu, "answers", r.proposals, "accepted", r.accepted)
pstats.Stats(profile).sort_stats("cumulative").print_stats(70)
pstats.Stats(profile).sort_stats("tottime").print_stats(30)
