"""Per second of a virtual replay: where an agent's proposer CPU goes on whole-plan and share leases (the
grant's JSON decoded, the block's table, ``BlockSearch`` set up; the rest is the search and the answer).

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS"""

import asyncio
import json
import sys
import time

from lab import routing_config

from benchmarks.lib import virtual_team as vt
from tasks.routing import lns, repair

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rows: list[tuple[float, int, float, float, float, float, int | None]] = []
piece: dict[str, float] = {}
table, setup, propose = lns.RoutingProposer._table, repair.BlockSearch.__init__, vt.Replay._propose


def timed_table(self, block, data):  # type: ignore[no-untyped-def]
    t = time.thread_time()
    out = table(self, block, data)
    piece["table"] = time.thread_time() - t
    return out


def timed_setup(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    t = time.thread_time()
    setup(self, *args, **kwargs)
    piece["setup"] = piece.get("setup", 0.0) + time.thread_time() - t


def timed_propose(self: vt.Replay, agent: vt.Agent, grant_json: str, ready: float) -> None:
    piece.clear()
    t = time.thread_time()
    lease = json.loads(grant_json)
    decode = time.thread_time() - t
    cpu = agent.cpu
    propose(self, agent, grant_json, ready)
    total = agent.cpu - cpu  # the replay's own booking: decode, search, answer
    robots = len(lease["contract"]["data"]["robots"])
    rows.append(
        (
            ready - self.created_at,
            robots,
            total,
            decode,
            piece.get("table", 0.0),
            piece.get("setup", 0.0),
            None,
        )
    )


lns.RoutingProposer._table = timed_table  # type: ignore[method-assign]
repair.BlockSearch.__init__ = timed_setup  # type: ignore[method-assign]
vt.Replay._propose = timed_propose  # type: ignore[method-assign]
asyncio.run(vt.Replay(routing_config(agents, seed, secs)).run())
for lo in range(int(secs)):
    for whole in (True, False):
        sel = [r for r in rows if lo <= r[0] < lo + 1 and (r[1] == 300) == whole]
        if sel:
            ms = [1000 * sum(r[i] for r in sel) / len(sel) for i in (2, 3, 4, 5)]
            print(
                f"{lo}-{lo + 1} s {'whole plan' if whole else 'share'}: {len(sel)} calls,"
                f" {ms[0]:.1f} ms each;"
                f" decode {ms[1]:.1f}, table {ms[2]:.1f}, BlockSearch set-up {ms[3]:.1f} ms"
            )
