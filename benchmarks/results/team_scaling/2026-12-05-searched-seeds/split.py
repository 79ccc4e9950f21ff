"""The coordinator's CPU by piece (thread time, no profiler) in [FROM, SECONDS) of a virtual replay, every
kind call on the loop. Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS FROM"""

import collections
import sys
import time

from benchmarks.lib import virtual_team as vt
from tasks.routing.task import RoutingTask

agents, seed, secs, since = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
spent: collections.Counter[str] = collections.Counter()
calls: collections.Counter[str] = collections.Counter()
timing = {"on": False, "depth": 0}


def timed(name):
    method = getattr(RoutingTask, name)

    def wrapper(*args, **kwargs):
        if not timing["on"] or timing["depth"]:
            return method(*args, **kwargs)
        timing["depth"] += 1
        t0 = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            spent[name] += time.thread_time() - t0
            calls[name] += 1
            timing["depth"] -= 1

    setattr(RoutingTask, name, wrapper)


for name in ("evaluate_change", "rebase", "validate", "apply", "contract", "form_lease", "footprint"):
    timed(name)
serve = vt.Replay.serve


async def timed_serve(self, arrival, what, call):
    timing["on"] = bool(self.created_at) and arrival - self.created_at >= since
    end, result = await serve(self, arrival, what, call)
    if timing["on"]:
        _, begin, finish, _ = self.core.calls[-1]
        spent["all of " + what] += finish - begin
        calls["all of " + what] += 1
    timing["on"] = False
    return end, result


vt.Replay.serve = timed_serve
params = {"blocks": RoutingTask.team_defaults(agents, "async")["blocks"], "map": "random-32-32-10",
          "robots": 300, "seed": seed}
vt.replay(vt.ReplayConfig(kind="routing", params=params, agents=agents, seconds=secs, seed=seed,
                          settings={"inline_step_ms": 1e9}))
for name in sorted(spent, key=lambda k: -spent[k]):
    each = 1000 * spent[name] / calls[name]
    print(f"{name:18s} {calls[name]:5d} calls {1000 * spent[name]:8.1f} ms {each:6.2f} ms each")
