"""Where a 16-agent team's coordinator core goes, per call: every call's CPU by kind (lease, submit,
abandon, ...), and inside them the CPU of forming leases (``lease_formed``, of which ``lease_members`` draws
the robots) and of building contracts (``build_contract``); a submit that brings the next lease forms and
builds one too.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS"""

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "2026-12-06-heap"))  # its lab.py: the k = 300 config
sys.path.insert(0, str(Path(__file__).parents[1]))  # labrun.py: the thread-CPU timer
from lab import routing_config  # noqa: E402
from labrun import thread_cpu  # noqa: E402

from benchmarks.lib import virtual_team as vt
from coordinator.runtime import leases
from tasks.routing import lease as routing_lease
from tasks.routing import task as routing_task

agents, seed, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
cpu: Counter[str] = Counter()
calls: Counter[str] = Counter()


def timed(module: Any, name: str) -> None:
    setattr(module, name, thread_cpu(cpu, name, getattr(module, name), calls))


timed(routing_lease, "lease_members")
timed(routing_task, "build_contract")
timed(leases, "lease_formed")
replay = vt.Replay(routing_config(agents, seed, seconds))
result = asyncio.run(replay.run())
by_call: dict[str, list[float]] = {}
for _arrival, begin, end, what in replay.core.calls:
    row = by_call.setdefault(what, [0, 0.0])
    row[0] += 1
    row[1] += end - begin
busy = result.summary()["busy_fraction"]
print(f"{agents} agents, seed {seed}, {seconds:g} s: coordinator busy {busy:.1%}")
for what, (n, s) in by_call.items():
    print(f"  {what:8} {int(n):5} calls {s:6.2f} s  {1000 * s / n:6.2f} ms a call")
for name in ("lease_formed", "lease_members", "build_contract"):
    each = 1000 * cpu[name] / calls[name]
    print(f"  inside: {name:14} {calls[name]:5} calls {cpu[name]:6.2f} s  {each:6.2f} ms")
