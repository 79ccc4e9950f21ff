"""Routing's neighbourhood leases (``LeaseNeighbourhoods``): a lease's robots are drawn where the plan
has delay.

At lease time the block about to be leased is formed anew from the whole current plan, among the robots
no other agent holds (MAPF-LNS's destroy heuristic, run over the plan as it is now, as DROP-LNS's workers
do): a delayed robot drawn with odds by its delay, and the robots met on random walks along its way (they
hold it up), again until the block holds its share of the free robots. What it leaves out goes to the
other free blocks, so block sizes change and a team of N agents is no longer bound to one fixed partition.

With ``lease_overlap`` (``form_overlapping_lease``) the robots are drawn from the whole plan, those other
agents hold included: a robot may be in several leases, and the answers settle it when they arrive.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from tasks.routing.destroy import walk_from
from tasks.routing.grid import Grid
from tasks.routing.instance import Instance
from tasks.routing.regroup import Blocks
from tasks.routing.state import RoutingState


class TaskForLeases(Protocol):
    """What lease formation reads of the task (``tasks/routing/task.py`` implements it): a protocol, so that
    the task can import this module and not the other way round."""

    @property
    def inst(self) -> Instance: ...

    @property
    def grid(self) -> Grid: ...

    def delays(self, state: RoutingState) -> list[int]: ...


WALKS = 24
"""Walks per phase from each delayed robot, and delayed robots drawn, at most: a robot whose way is held by
other agents' robots meets nobody eligible, and 8 k walks from it cost up to half a second at k = 300."""


def lease_members(
    task: TaskForLeases, state: RoutingState, pool: set[int], k: int, rng: random.Random
) -> list[int]:
    """``k`` robots of ``pool``: delayed ones drawn by their delay, each with the robots of ``pool`` met on
    walks along its way; the rest (when too few are delayed) drawn uniformly from ``pool``."""
    delay = task.delays(state)
    delayed = [r for r in pool if delay[r] > 0]
    chosen: list[int] = []
    taken: set[int] = set()
    inst, grid = task.inst, task.grid
    for _ in range(WALKS):
        if len(chosen) >= k or not delayed:
            break
        start = rng.choices(delayed, weights=[delay[r] for r in delayed])[0]
        grown = walk_from(
            grid, state.paths[start], inst.goals[start], [start], k - len(chosen), rng, state.index,
            eligible=pool - taken, walks=WALKS,
        )  # fmt: skip
        for r in grown:
            taken.add(r)
            chosen.append(r)
        delayed = [r for r in delayed if r not in taken]
    if len(chosen) < k:
        rest = sorted(pool - taken)
        chosen.extend(rng.sample(rest, min(k - len(chosen), len(rest))))
    return chosen


def spread(blocks: Blocks, block: int, members: Sequence[int], free: Sequence[int]) -> Blocks:
    """``blocks`` with ``block`` holding ``members``; the robots it held before and no longer holds go to the
    smallest of the ``free`` blocks (not ``block``), and the members leave the free blocks they were in."""
    mine = set(members)
    new = [list(b) for b in blocks]
    left = [r for r in blocks[block] if r not in mine]
    for b in free:
        new[b] = [r for r in new[b] if r not in mine]
    new[block] = sorted(mine)
    others = [b for b in free if b != block]
    for r in left:
        target = min(others, key=lambda b: (len(new[b]), b))
        new[target].append(r)
    return tuple(tuple(sorted(b)) for b in new)


def form_overlapping_lease(
    task: TaskForLeases, state: RoutingState, block: int, k: int, attempt: int
) -> RoutingState | None:
    """``state`` with ``block`` holding ``k`` robots drawn from the whole plan, robots that other agents hold
    included (DROP-LNS: each worker destroys a neighbourhood anywhere in the plan); the other blocks keep
    theirs, so a robot may be in several leases. Which of two answers that changed one robot wins is settled
    when they arrive: each writes only the robots it changed and merges only if it improves the plan as it is
    then. None when the block already holds those robots."""
    n = len(state.paths)
    if k >= n:  # every robot (one agent): drawing them by walks kept its coordinator 8 % busy, 4 % without
        members = tuple(range(n))
    else:
        rng = random.Random(attempt * 1_000_003 + block)
        members = tuple(sorted(lease_members(task, state, set(range(n)), k, rng)))
    if members == state.blocks[block]:
        return None
    blocks = list(state.blocks)
    blocks[block] = members
    return replace(state, blocks=tuple(blocks))


def form_routing_lease(
    task: TaskForLeases, state: RoutingState, block: int, held: frozenset[int], attempt: int
) -> RoutingState | None:
    """``state`` with ``block`` holding a neighbourhood of its fair share of the free robots (those of the
    blocks not ``held``); None when no other block is free to take what it leaves out (one agent: its one
    block holds every robot)."""
    free = [b for b in range(len(state.blocks)) if b not in held or b == block]
    if len(free) < 2:
        return None
    pool = {r for b in free for r in state.blocks[b]}
    k = max(1, round(len(pool) / len(free)))
    rng = random.Random(attempt * 1_000_003 + block)
    members = lease_members(task, state, pool, k, rng)
    blocks = spread(state.blocks, block, members, free)
    if any(not b for b in blocks):
        return None  # a free block would be left empty: keep the blocks as they are
    return None if blocks == state.blocks else replace(state, blocks=blocks)
