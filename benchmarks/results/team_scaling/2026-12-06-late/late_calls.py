"""Every proposer call of a virtual replay, by window: calls, their CPU, lease sizes, how many found a
gain and how much (over the plan leased), and what the head gained meanwhile; the rate per CPU second is
comparable with late_search.py's one core.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS [WINDOW]"""

import asyncio
import json
import sys
import time

from lab import routing_config

from benchmarks.lib import virtual_team as vt

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
window = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
calls: list[tuple[float, float, int, float, float]] = []  # (ready, cpu, robots, gain, budget asked)
propose = vt.Replay._propose


def traced(self: vt.Replay, agent: vt.Agent, grant_json: str, ready: float) -> None:
    contract = json.loads(grant_json)["contract"]
    proposer = agent.proposer
    search = proposer.propose
    drafts = []

    def kept(c: dict):  # type: ignore[no-untyped-def]
        t0 = time.thread_time()
        draft = search(c)
        drafts.append((draft, time.thread_time() - t0))
        return draft

    proposer.propose = kept  # type: ignore[method-assign]
    propose(self, agent, grant_json, ready)
    proposer.propose = search  # type: ignore[method-assign]
    draft, cpu = drafts[0]
    gain = 0.0 if draft is None else draft.predicted_improvement
    size = len(contract["data"]["robots"])
    calls.append((ready - self.created_at, cpu, size, gain, proposer._budget(contract, contract["block"])))


vt.Replay._propose = traced  # type: ignore[method-assign]
replay = vt.Replay(routing_config(agents, seed, secs))
asyncio.run(replay.run())
commits = replay.commits
print(f"N={agents} seed={seed} {secs} s: verdicts {replay.verdicts}")
lo = 0.0
while lo < secs:
    hi = lo + window
    sel = [c for c in calls if lo <= c[0] < hi]
    heads = [h for t, h in commits if t < hi]
    before = [h for t, h in commits if t < lo]
    if sel and heads:
        cpu = sum(c[1] for c in sel)
        found = [c for c in sel if c[3] > 0]
        gain = sum(c[3] for c in found)
        head_gain = (before[-1] if before else heads[0]) - heads[-1]
        print(
            f"{lo:4.0f}-{hi:<4.0f} s: head {heads[-1]:.0f}; calls {len(sel)} cpu {cpu:.1f} s"
            f" ({cpu / len(sel) * 1000:.0f} ms, robots {sum(c[2] for c in sel) / len(sel):.0f});"
            f" found {len(found)} ({len(found) / cpu:.2f}/cpu-s) gain {gain:.0f} ({gain / cpu:.2f}/cpu-s);"
            f" head gained {head_gain:.0f} ({head_gain / cpu:.2f}/cpu-s)"
        )
    lo = hi
