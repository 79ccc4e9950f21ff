"""A whole-plan contract's CPU and size, whole and written since the agent's kept one (routing k = 300, 40
heads of 10 changed paths each; the agent keeps the head 10 versions back): the build alone, interleaved,
medians of 10.

    PYTHONPATH=. .venv/bin/python $C/contract_cost.py   # from a checkout's root

Not a product module.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import replace

from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.contract import build_contract


def main() -> None:
    params = {"map": "random-32-32-10", "robots": 300, "seed": 1, "blocks": 16, "level_merges": True}
    task = create_task("routing", params)
    assert isinstance(task, RoutingTask)
    first = task.form_lease(task.initial_state(), 0, frozenset(), 0)
    assert first is not None
    rng = random.Random(1)
    heads = [first]
    for _ in range(40):  # each head moves 10 robots to another path (a shortest one from a random free cell)
        paths = list(heads[-1].paths)
        for r in rng.sample(range(300), 10):
            p = paths[r]
            detour = rng.choice(task.grid.moves(p[0]))
            paths[r] = (p[0], *task.grid.shortest_path(detour, task.inst.goals[r]))
        heads.append(replace(heads[-1], paths=tuple(paths)))
    inst, cache, robots = task.inst, task._geometry, first.blocks[0]

    def cost(since: bool) -> tuple[float, float]:
        t0, size = time.process_time(), 0
        for i in range(15, 39):
            held = heads[i - 10].paths if since else None
            size += len(build_contract(inst, heads[i].paths, robots, 2, 10, cache, None, held).json)
        return (time.process_time() - t0) / 24 * 1e3, size / 24 / 1000

    whole, since = [], []
    for _ in range(10):
        whole.append(cost(False))
        since.append(cost(True))
    for name, runs in (("whole", whole), ("since", since)):
        ms = statistics.median(r[0] for r in runs)
        print(f"{name}: {ms:.2f} ms a contract, {runs[0][1]:.1f} KB")


if __name__ == "__main__":
    main()
