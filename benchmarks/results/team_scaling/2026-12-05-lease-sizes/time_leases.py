"""The coordinator's share of each lease in a virtual replay (grant, contract and its JSON), by 2 s of
virtual time, every kind call on the loop so that thread CPU time sees all of it. Run from a checkout:
PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS. A checkout without ``wire_json`` writes the grant
with pydantic, as it did then."""

import statistics
import sys
import time

from benchmarks.lib import virtual_team as vt
from tasks.routing.task import RoutingTask

try:
    from coordinator.runtime.wire_json import dump_json
except ImportError:  # before 39245a0

    def dump_json(model):
        return model.model_dump_json()


seen = []  # (virtual seconds, bytes, thread CPU seconds, robots leased)


async def timed_grant_json(self, agent):
    start = time.thread_time()
    grant = await self.service.lease(self.task_id, agent.record)
    text = dump_json(grant)
    spent = time.thread_time() - start
    seen.append((self.clock() - self.created_at, len(text), spent, len(grant.contract["data"]["robots"])))
    return text


vt.Replay._grant_json = timed_grant_json
agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
params = {"blocks": RoutingTask.team_defaults(agents, "async")["blocks"], "map": "random-32-32-10",
          "robots": 300, "seed": seed}
config = vt.ReplayConfig(
    kind="routing", params=params, agents=agents, seconds=secs, seed=seed, settings={"inline_step_ms": 1e9}
)
r = vt.replay(config)
print(f"coordinator cpu {r.coordinator_cpu:.2f} s, answers {r.proposals}, leases {len(seen)}")
print("from s  leases  bytes (median)  ms a lease (mean)  robots (median)")
for lo in range(0, int(secs), 2):
    w = [s for s in seen if lo <= s[0] < lo + 2]
    if w:
        print(f"{lo:6d}  {len(w):6d}  {int(statistics.median(x[1] for x in w)):14d}  "
              f"{1000 * statistics.mean(x[2] for x in w):17.2f}  {statistics.median(x[3] for x in w):15.0f}")
late = [s for s in seen if s[0] >= 4]
print(f"after 4 s: {len(late)} leases, {1000 * statistics.mean(x[2] for x in late):.2f} ms a lease")
