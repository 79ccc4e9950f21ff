"""Re-partitioning robots between rounds: who holds whom up in the current plan shares a block.

A robot that waits for a robot of another block improves only if that robot
moves first; alone, moving it aside costs its own block and gains nothing, so
neither agent proposes it. Grouping the delayed robot with the robots in its
way puts the joint move within one agent's reach.
"""

from __future__ import annotations

import itertools

from tasks.routing.grid import Grid
from tasks.routing.occupancy import OccupancyIndex, Path, cost
from tasks.routing.partition import by_interaction, shaken
from tasks.routing.repair import collision_graph

Blocks = tuple[tuple[int, ...], ...]

COLLIDING = 1000.0
"""A colliding pair's weight: above any count of holding-up visits, so the pair shares a block first."""


def holding_up(
    grid: Grid,
    starts: tuple[int, ...],
    goals: tuple[int, ...],
    paths: tuple[Path, ...],
    index: OccupancyIndex,
    slack: int = 2,
) -> dict[tuple[int, int], float]:
    """Weights (i < j) for robots near a delayed robot's shortest or current route, within ``slack`` steps,
    and ``COLLIDING`` for every pair in collision.

    A collision at density is often between two robots on shortest paths (one parked early on a cell
    the other crosses late): neither is delayed, so without its own weight the pair could stay split
    between two agents for good, and neither agent can move the other robot out of the way."""
    n = grid.n_cells
    weights: dict[tuple[int, int], float] = {}
    if index.vert or index.park:
        for r, mates in collision_graph(index).items():
            for o in mates:
                if r < o:
                    weights[(r, o)] = COLLIDING
    for r, path in enumerate(paths):
        if cost(path) <= grid.distances(goals[r])[starts[r]]:
            continue  # on a shortest path already: nobody holds it up
        for route in (grid.shortest_path(starts[r], goals[r]), path):
            for t, c in enumerate(route):
                others: set[int] = set()
                for u in range(max(0, t - slack), t + slack + 1):
                    others.update(index.vert.get(u * n + c, ()))
                parked = index.park.get(c)
                if parked is not None and parked[1] <= t + slack:
                    others.add(parked[0])
                others.discard(r)
                for o in others:
                    key = (r, o) if r < o else (o, r)
                    weights[key] = weights.get(key, 0.0) + 1.0
    return weights


def regroup_by_weight(blocks: Blocks, weights: dict[tuple[int, int], float], attempt: int) -> Blocks | None:
    """A balanced partition that keeps more of ``weights`` inside blocks; None when it finds no other one.

    It first improves the current partition by swaps. When the current one is
    already a local optimum (as after a regrouping that did not help: the plan,
    hence the weights, did not change), it shakes a quarter of the involved
    robots first, seeded by ``attempt``, and improves from there.
    """
    if len(blocks) < 2 or not weights:
        return None
    current = [sorted(b) for b in blocks]
    involved = sorted({i for pair in weights for i in pair})
    swaps = max(1, len(involved) // 4)
    starts = itertools.chain(
        [current], (shaken(current, involved, swaps, seed=attempt * 3 + k) for k in range(3))
    )
    for start in starts:
        new = [sorted(g) for g in by_interaction(weights, start)]
        if new != current:
            return tuple(tuple(g) for g in new)
    return None
