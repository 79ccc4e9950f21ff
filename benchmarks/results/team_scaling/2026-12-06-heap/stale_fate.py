"""What became of the answers that arrived after others had merged, by window of a virtual replay: robots
written, kept by ``keep_what_fits``, no cheaper than on the head they met; their gain over that head, all of
them and the kept ones.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS"""

import asyncio
import statistics
import sys

from lab import routing_config

from benchmarks.lib import virtual_team as vt
from tasks.routing import rebase
from tasks.routing.occupancy import cost

agents, seed, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rows: list[tuple[float, int, int, int, int, int]] = []
now = [0.0]
settle, submit = rebase.Rebaser.rebase, vt.Replay._on_submit


def traced(self, state, robots, value, seconds, rng):  # type: ignore[no-untyped-def]
    written = {r: p for r, p in zip(robots, value, strict=True) if p is not None}
    kept, _ = rebase.keep_what_fits(state.index, state.paths, written)
    no_cheaper = sum(1 for r, p in written.items() if cost(p) >= cost(state.paths[r]))
    gain = sum(cost(state.paths[r]) - cost(p) for r, p in written.items())
    gain_kept = sum(cost(state.paths[r]) - cost(p) for r, p in kept.items())
    rows.append((now[0], len(written), len(kept), no_cheaper, gain, gain_kept))
    return settle(self, state, robots, value, seconds, rng)


async def on_submit(self: vt.Replay, agent: vt.Agent, at: float, body: str) -> None:
    now[0] = at - self.created_at
    await submit(self, agent, at, body)


rebase.Rebaser.rebase = traced  # type: ignore[method-assign]
vt.Replay._on_submit = on_submit  # type: ignore[method-assign]
replay = vt.Replay(routing_config(agents, seed, secs))
asyncio.run(replay.run())
print(f"N={agents} seed={seed} {secs} s: verdicts {replay.verdicts}")
for lo, hi in ((0, 5), (5, 10), (10, 15), (15, secs)):
    for name, sel in (
        ("arrived stale", [r for r in rows if lo <= r[0] < hi]),
        ("of which kept no gain", [r for r in rows if lo <= r[0] < hi and r[5] <= 0]),
    ):
        if sel:
            m = [statistics.mean(r[i] for r in sel) for i in range(1, 6)]
            print(
                f"{lo}-{hi} s {name}: {len(sel)}; written {m[0]:.1f}, kept {m[1]:.1f}, no cheaper than on the"
                f" head {m[2]:.1f}; gain over the head {m[3]:.1f}, of the kept {m[4]:.1f}"
            )
