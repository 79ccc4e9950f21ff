"""Per second of a virtual replay: the answers as their agents sent them (robots written that gained, kept
their cost, or paid for it; the gain over the plan they were leased).

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS"""

import asyncio
import json
import statistics
import sys

from lab import routing_config

from benchmarks.lib import virtual_team as vt

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rows: list[tuple[float, int, int, int, float]] = []
propose = vt.Replay._propose


def shape(lease: dict, value: list) -> tuple[int, int, int]:
    gained = same = paid = 0
    for robot, path in zip(lease["contract"]["data"]["robots"], value, strict=True):
        if path is None:
            continue
        before, after = len(robot["path"]) - 1, len(path) - 1
        gained += after < before
        same += after == before
        paid += after > before
    return gained, same, paid


def traced(self: vt.Replay, agent: vt.Agent, grant_json: str, ready: float) -> None:
    lease = json.loads(grant_json)
    proposer = agent.proposer
    search = proposer.propose
    drafts = []

    def kept(contract: dict):  # type: ignore[no-untyped-def]
        draft = search(contract)
        drafts.append(draft)
        return draft

    proposer.propose = kept  # type: ignore[method-assign]
    propose(self, agent, grant_json, ready)
    proposer.propose = search  # type: ignore[method-assign]
    if drafts[0] is not None:
        rows.append(
            (ready - self.created_at, *shape(lease, drafts[0].value), drafts[0].predicted_improvement)
        )


vt.Replay._propose = traced  # type: ignore[method-assign]
asyncio.run(vt.Replay(routing_config(agents, seed, secs)).run())
for lo in range(int(secs)):
    sel = [r for r in rows if lo <= r[0] < lo + 1]
    if sel:
        mean = [statistics.mean(r[i] for r in sel) for i in range(1, 5)]
        print(
            f"{lo}-{lo + 1} s: {len(sel)} answers; robots written that gained {mean[0]:.1f}, kept their cost"
            f" {mean[1]:.1f}, paid {mean[2]:.1f}; gain over the leased plan {mean[3]:.1f}"
        )
