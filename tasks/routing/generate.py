"""Seeded random instances: a grid with a given obstacle density and k start/goal pairs.

Only cells of the largest connected free region are used, so every robot can
reach its goal; starts are distinct and goals are distinct (the model needs both).
"""

from __future__ import annotations

import random

from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.movingai import Agent, BadInstance


def random_grid(width: int, height: int, density: float, seed: int) -> Grid:
    rng = random.Random(seed)
    free = tuple(rng.random() >= density for _ in range(width * height))
    return Grid(width, height, free, f"generated-{width}x{height}-d{density:g}-s{seed}")


def largest_region(grid: Grid) -> list[int]:
    seen: set[int] = set()
    best: list[int] = []
    for c in range(grid.n_cells):
        if not grid.free[c] or c in seen:
            continue
        dist = grid.distances(c)
        region = [i for i, d in enumerate(dist) if d != UNREACHABLE]
        seen.update(region)
        if len(region) > len(best):
            best = region
    return best


def random_agents(grid: Grid, k: int, seed: int) -> list[Agent]:
    region = largest_region(grid)
    if len(region) < k:
        raise BadInstance(
            "robots", f"the generated grid has {len(region)} connected free cells, {k} robots requested"
        )
    rng = random.Random(seed + 1)
    starts = rng.sample(region, k)
    goals = rng.sample(region, k)
    return [Agent(grid.xy(s), grid.xy(g)) for s, g in zip(starts, goals, strict=True)]
