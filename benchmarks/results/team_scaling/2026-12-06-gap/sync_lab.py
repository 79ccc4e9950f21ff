"""Lab (2026-12-06): a search that takes the head's changes while it runs. Each agent's proposer call runs in
a thread of its own, in lockstep with the replay: every ``LAB_SYNC_SECONDS`` of its CPU the search asks for
the robots changed since the plan it is on (``lns.py`` of ``sync-lab.patch``); the replay queues that
request at the call's virtual time, and once every earlier event is handled, a coordinator call (booked on
its core) encodes the changed paths, which the search takes in (``BlockSearch.follow``). The answer's base
is the last plan taken. Not a product module.

    # from a checkout with sync-lab.patch applied
    LAB_SYNC_SECONDS=0.005 PYTHONPATH=. .venv/bin/python /path/to/sync_lab.py SECONDS AGENTS [--seed S] \
        [-- team_scaling virtual options...]

Prints the run's totals, the answers' verdicts by the commits between their base and the head they met, and
how many syncs took how many robots.
"""

from __future__ import annotations

import argparse
import collections
import json
import queue
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.lib import virtual_team as vt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # labrun.py, the team-scaling labs' helper
from labrun import print_refused_by_commits, replay_once  # noqa: E402


@dataclass
class SyncPoint:
    call: Call


@dataclass
class Call:
    agent: Any
    ready: float
    grant_json: str
    version: int = 0
    to_main: queue.Queue[Any] = field(default_factory=queue.Queue)
    to_agent: queue.Queue[Any] = field(default_factory=queue.Queue)
    t0: float = 0.0

    def body(self) -> None:
        self.t0 = time.thread_time()
        lease = json.loads(self.grant_json)
        self.version = lease["version"]
        proposer = self.agent.proposer
        proposer.sync = self.sync
        try:
            draft = proposer.propose(lease["contract"])
        except BaseException as exc:
            self.to_main.put(("error", exc))
            raise
        self.to_main.put(("done", draft, time.thread_time() - self.t0, lease))

    def sync(self) -> dict[int, Any] | None:
        self.to_main.put(("sync", time.thread_time() - self.t0))
        text = self.to_agent.get()
        if text is None:
            return None
        got = json.loads(text)
        self.version = got["version"]
        return {int(r): cells for r, cells in got["paths"].items()}


plans: dict[int, list[Any]] = {}
tally: collections.Counter[Any] = collections.Counter()
rows: list[tuple[str, int]] = []


def install() -> None:  # noqa: C901 (a lab's patches, read top-down)
    replay_cls = vt.Replay
    serve = replay_cls.serve

    async def recorded(self: Any, arrival: float, what: str, call: Any) -> Any:
        out = await serve(self, arrival, what, call)
        if self.task_id:
            head = await self.service.store.get_head(self.task_id)
            plans.setdefault(head.version, head.state["cells"])
        return out

    def propose(self: Any, agent: Any, grant_json: str, ready: float) -> None:
        call = Call(agent, ready, grant_json)
        threading.Thread(target=call.body, daemon=True).start()
        self._lab_wait(call)

    def wait(self: Any, call: Call) -> None:
        msg = call.to_main.get()
        if msg[0] == "error":
            raise RuntimeError("the proposer failed") from msg[1]
        if msg[0] == "sync":
            self.queue.push(call.ready + msg[1], "renew", call.agent.index, SyncPoint(call))
            return
        _, draft, cpu, lease = msg
        agent, ready = call.agent, call.ready
        body = None
        if draft is not None:
            usage = dict(draft.info.get("usage") or {"calls": 1, "model": "heuristic"}) | {"seconds": cpu}
            body = json.dumps(
                {
                    "id": uuid.uuid4().hex, "lease_id": lease["lease_id"], "block": draft.block,
                    "base_version": call.version, "value": draft.value,
                    "predicted_improvement": draft.predicted_improvement, "usage": usage,
                    "exact_minimizer": False,
                }
            )  # fmt: skip
        # (the end of c92ab82's ``Replay._propose``, which this replaces: it runs on that tree, which has no
        # lockstep calls; ``benchmarks/lib/virtual_team.py`` has them since 902d272)
        agent.cpu += cpu
        agent.calls += 1
        renew_every = float(lease["ttl"]) / 3
        for i in range(1, int(cpu / renew_every) + 1):
            self.queue.push(ready + i * renew_every, "renew", agent.index, lease["lease_id"])
        if body is None:
            agent.wasted += cpu
            self.queue.push(ready + cpu, "abandon", agent.index, (lease, cpu))
        else:
            self.queue.push(ready + cpu, "submit", agent.index, body)

    renew = replay_cls._on_renew

    async def on_renew(self: Any, agent: Any, at: float, payload: Any) -> None:
        if not isinstance(payload, SyncPoint):
            await renew(self, agent, at, payload)
            return
        call = payload.call
        head = await self.service.store.get_head(self.task_id)
        then, now = plans.get(call.version), head.state["cells"]

        async def changes() -> str | None:
            if head.version == call.version or then is None:
                return None
            changed = {r: p for r, (a, p) in enumerate(zip(then, now, strict=True)) if a != p}
            tally[("sync took", min(len(changed), 30) // 10 * 10)] += 1
            return json.dumps({"version": head.version, "paths": changed})

        _end, text = await self.serve(at, "sync", changes)
        tally["syncs"] += 1
        call.to_agent.put(text)
        self._lab_wait(call)

    on_submit = replay_cls._on_submit

    async def submitted(self: Any, agent: Any, at: float, body: str) -> None:
        head = (await self.service.store.get_head(self.task_id)).version
        before = dict(self.verdicts)
        await on_submit(self, agent, at, body)
        code = next((k for k, v in self.verdicts.items() if v != before.get(k, 0)), "?")
        rows.append((code, head - json.loads(body)["base_version"]))

    replay_cls.serve = recorded  # type: ignore[method-assign]
    replay_cls._propose = propose  # type: ignore[method-assign]
    replay_cls._lab_wait = wait  # type: ignore[attr-defined]
    replay_cls._on_renew = on_renew  # type: ignore[method-assign]
    replay_cls._on_submit = submitted  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("seconds")
    parser.add_argument("agents", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="/dev/null")
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args()
    install()
    run = replay_once(args.seconds, args.agents, args.seed, args.rest, ("5", "10", "20", "30"), args.out)
    at = {t: min((v for s, v in run["curve"] if s <= t), default=None) for t in (5, 10, 20, 30)}
    print("  plan at", at)
    print_refused_by_commits(rows)
    for key, count in sorted(tally.items(), key=str):
        print(f"  {key}: {count}")


if __name__ == "__main__":
    main()
