"""Routing's neighbourhood generators for adaptive block selection (``Task.neighbourhoods``).

- ``partition``: keep the blocks.
- ``interaction``: the kind's regrouping (who holds whom up shares a block, ``regroup.py``).
- ``agent``, ``intersection``, ``random``: the LNS destroy heuristics of MAPF-LNS (``destroy.py``), one per
  block: each block's core is the neighbourhood the heuristic picks (a walk from a delayed robot, the robots
  through nearby intersections, a uniform sample), ``size`` of the block; the rest of every block keeps its
  robots where there is room. Robots that hold each other up then sit in one agent's block.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tasks.routing.destroy import GENERATORS
from tasks.routing.regroup import Blocks

if TYPE_CHECKING:
    from tasks.routing.task import RoutingState, RoutingTask

NAMES = ("partition", "interaction", *GENERATORS)


def rebuild(blocks: Blocks, cores: Sequence[Sequence[int]]) -> Blocks:
    """Blocks of the same sizes, block b holding ``cores[b]`` (disjoint, each at most the block's size) and
    every other robot in its old block where there is room, else in the first block with room."""
    sizes = [len(b) for b in blocks]
    taken = {r for core in cores for r in core}
    new = [list(core) for core in cores]
    spill: list[int] = []
    for b, old in enumerate(blocks):
        for r in old:
            if r in taken:
                continue
            (new[b] if len(new[b]) < sizes[b] else spill).append(r)
    for r in spill:
        b = next(i for i in range(len(new)) if len(new[i]) < sizes[i])
        new[b].append(r)
    return tuple(tuple(sorted(g)) for g in new)


def form_blocks(
    task: RoutingTask, state: RoutingState, name: str, size: float, attempt: int
) -> RoutingState | None:
    if name == "partition" or len(state.blocks) < 2:
        return None
    if name == "interaction":
        return task.regroup(state, attempt)
    heuristic = GENERATORS.get(name)
    if heuristic is None:
        raise ValueError(f"routing has no neighbourhood generator '{name}' (it has {', '.join(NAMES)})")
    rng = random.Random(attempt * 1_000_003 + zlib.crc32(name.encode()))
    inst = task.inst
    tabu: set[int] = set()
    taken: set[int] = set()
    cores: list[list[int]] = []
    for block in state.blocks:
        k = max(1, min(len(block), round(size * len(block))))
        picked = heuristic(task.grid, state.paths, inst.starts, inst.goals, k, rng, tabu)
        core = [r for r in dict.fromkeys(picked) if r not in taken][:k]
        taken.update(core)
        cores.append(core)
    blocks = rebuild(state.blocks, cores)
    return None if blocks == tuple(tuple(sorted(b)) for b in state.blocks) else replace(state, blocks=blocks)
