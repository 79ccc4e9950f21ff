"""A virtual replay's head at its end, saved as the plan's paths (cells per robot), for late_search.py's
START_FILE: the plan a team stalled on, searched again by one core.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS AGENTS SEED SECONDS OUT.json"""

import asyncio
import json
import sys

from lab import routing_config

from benchmarks.lib import virtual_team as vt

agents, seed, secs, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]


async def main() -> None:
    replay = vt.Replay(routing_config(agents, seed, secs))
    await replay.run()
    head = await replay.service.store.get_head(replay.task_id)
    built = replay.service.cache.built(replay.task_id)
    assert built is not None and built.snapshot.version == head.version
    paths = [list(p) for p in built.snapshot.state.paths]
    print(f"N={agents} seed={seed} {secs} s: head {head.objective} (version {head.version})")
    json.dump({"seed": seed, "objective": head.objective, "paths": paths}, open(out, "w"))


asyncio.run(main())
