"""Routing's neighbourhood generators for adaptive block selection (``Neighbourhoods.neighbourhoods``).

- ``partition``: keep the blocks.
- ``interaction``: the kind's regrouping (who holds whom up shares a block, ``regroup.py``).
- ``agent``, ``intersection``, ``random``: the LNS destroy heuristics of MAPF-LNS (``destroy.py``), one per
  block: each block's core is the neighbourhood the heuristic picks (a walk from a delayed robot, the robots
  through nearby intersections, a uniform sample), ``size`` of the block; the rest of every block keeps its
  robots where there is room. Robots that hold each other up then sit in one agent's block.

With ``keep`` (adaptive selection's ``hold``: the blocks whose proposals merged), those blocks stay and the
generator forms the others among their own robots.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from tasks.routing.destroy import GENERATORS
from tasks.routing.grid import Grid
from tasks.routing.instance import Instance, RoutingParams
from tasks.routing.occupancy import OccupancyIndex
from tasks.routing.regroup import Blocks, regroup_by_weight
from tasks.routing.state import RoutingState

NAMES = ("partition", "interaction", *GENERATORS)


class TaskForGenerators(Protocol):
    """What the generators read of the task (``tasks/routing/task.py`` implements it): a protocol, so that the
    task can import this module and not the other way round."""

    @property
    def p(self) -> RoutingParams: ...

    @property
    def inst(self) -> Instance: ...

    @property
    def grid(self) -> Grid: ...

    def regroup(self, state: RoutingState, attempt: int) -> RoutingState | None: ...

    def holding_up(self, state: RoutingState) -> dict[tuple[int, int], float]: ...


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


def form_routing_blocks(
    task: TaskForGenerators,
    state: RoutingState,
    name: str,
    size: float,
    attempt: int,
    keep: frozenset[int] = frozenset(),
) -> RoutingState | None:
    """New blocks by generator ``name``; the blocks in ``keep`` stay as they are and the others are formed
    among their own robots (None when fewer than two are left to form)."""
    free = [b for b in range(len(state.blocks)) if b not in keep]
    if name not in NAMES:
        raise ValueError(f"routing has no neighbourhood generator '{name}' (it has {', '.join(NAMES)})")
    if name == "partition" or len(free) < 2:
        return None
    if name == "interaction":
        if not keep:
            return task.regroup(state, attempt)
        return _regroup_some(task, state, free, attempt)
    heuristic = GENERATORS[name]
    rng = random.Random(attempt * 1_000_003 + zlib.crc32(name.encode()))
    inst = task.inst
    robots = sorted(r for b in free for r in state.blocks[b])  # the heuristic sees these robots only
    paths = [state.paths[r] for r in robots]
    starts = [inst.starts[r] for r in robots]
    goals = [inst.goals[r] for r in robots]
    index = OccupancyIndex.build(task.grid.n_cells, dict(enumerate(paths)))
    tabu: set[int] = set()
    taken: set[int] = set()
    cores: list[list[int]] = [list(block) for block in state.blocks]
    for b in free:
        block = state.blocks[b]
        k = max(1, min(len(block), round(size * len(block))))
        picked = heuristic(task.grid, paths, starts, goals, k, rng, tabu, index)
        core = [robots[i] for i in dict.fromkeys(picked) if robots[i] not in taken][:k]
        taken.update(core)
        cores[b] = core
    blocks = rebuild(state.blocks, cores)
    return None if blocks == tuple(tuple(sorted(b)) for b in state.blocks) else replace(state, blocks=blocks)


def _regroup_some(
    task: TaskForGenerators, state: RoutingState, free: Sequence[int], attempt: int
) -> RoutingState | None:
    """The kind's regrouping by interaction among the ``free`` blocks only (the others stay)."""
    if not task.p.regroup:
        return None
    mine = {r for b in free for r in state.blocks[b]}
    weights = task.holding_up(state)
    weights = {pair: w for pair, w in weights.items() if pair[0] in mine and pair[1] in mine}
    some = regroup_by_weight(tuple(state.blocks[b] for b in free), weights, attempt)
    if some is None:
        return None
    blocks = list(state.blocks)
    for b, group in zip(free, some, strict=True):
        blocks[b] = tuple(sorted(group))
    return replace(state, blocks=tuple(blocks))
