"""LNS destroy heuristics of the MAPF literature (Li et al., MAPF-LNS, IJCAI 2021), as neighbourhood generators.

- ``agent``: random walk from the most-delayed robot. Starting at a random time on its path, walk the
  space-time grid towards the goal (with random detours) through the cells from which it could still
  arrive earlier than it does, collecting every robot met at a walked (cell, time): those are the robots
  that hold it up.
- ``intersection``: the robots that pass an intersection vertex (degree ≥ 3), grown breadth-first over
  neighbouring intersections until the neighbourhood is full. Robots that cross there interact.
- ``random``: a uniform sample.

Each takes the block's current paths with their occupancy index (robots by position in ``paths``) and
returns at most ``k`` robot indices. ``AdaptiveWeights`` is
the ALNS roulette wheel that MAPF-LNS uses to choose among them: a generator whose neighbourhood
improved the plan gains weight, w ← (1 − r)·w + r·gain.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tasks.routing.grid import Grid
from tasks.routing.occupancy import OccupancyIndex, Path

Generator = Callable[
    [Grid, Sequence[Path], Sequence[int], Sequence[int], int, random.Random, set[int], OccupancyIndex],
    list[int],
]


def delays(grid: Grid, paths: Sequence[Path], starts: Sequence[int], goals: Sequence[int]) -> list[int]:
    return [len(p) - 1 - grid.distances(g)[s] for p, s, g in zip(paths, starts, goals, strict=True)]


def occupants(index: OccupancyIndex, cell: int, t: int) -> list[int]:
    """The robots in ``cell`` at time ``t``, by index (a parked robot from its arrival on), read off the
    plan's occupancy index: the LNS keeps one up to date, so a destroy step costs no pass over the plan."""
    here = index.vert.get(t * index.n + cell, ())
    parked = index.park.get(cell)
    if parked is not None and parked[1] <= t:
        return sorted((*here, parked[0]))
    return list(here)


def random_walk_from_delayed(
    grid: Grid,
    paths: Sequence[Path],
    starts: Sequence[int],
    goals: Sequence[int],
    k: int,
    rng: random.Random,
    tabu: set[int],
    index: OccupancyIndex,
    spares: Sequence[int] = (1, 0),
) -> list[int]:
    """The most-delayed robot not recently chosen, and the robots met on random walks along its way: first
    walks that keep the goal reachable one step before its current arrival (MAPF-LNS's walk: the robots met
    there are in the way of an earlier arrival), then, while the neighbourhood is not full, walks that may
    arrive on time (``spares``: the steps to spare, phase by phase). The first phase is what pays one agent
    (warehouse k=200: 16,248-16,270 at 30 s on 3 seeds against 16,267-16,272 with on-time walks only). The
    second keeps a team's walks, which meet only their own block's robots, from ending short; without it
    the team was behind on 6 of 10 runs (docs/notes/2026-12-03-lns-walk.md, "MAPF-LNS's random walk")."""
    d = delays(grid, paths, starts, goals)
    order = sorted((i for i in range(len(paths)) if d[i] > 0), key=lambda i: -d[i])
    pick = next((i for i in order if i not in tabu), None)
    if pick is None:
        tabu.clear()
        pick = order[0] if order else None
    if pick is None:
        return []
    tabu.add(pick)
    return walk_from(grid, paths[pick], goals[pick], [pick], k, rng, index, spares)


def walk_from(
    grid: Grid,
    path: Path,
    goal: int,
    chosen: list[int],
    k: int,
    rng: random.Random,
    index: OccupancyIndex,
    spares: Sequence[int] = (1, 0),
    eligible: set[int] | None = None,
    walks: int | None = None,
) -> list[int]:
    """``chosen`` grown with the robots met on random walks along ``path`` (a delayed robot's) towards
    ``goal``, phase by phase as ``spares`` says (``random_walk_from_delayed``), until it holds ``k``;
    with ``eligible``, robots not in it are passed over; ``walks`` per phase at most (8 k by default)."""
    seen = set(chosen)
    dist = grid.distances(goal)
    tiers, tier_of = grid.walk_options(goal), grid.walk_tier
    moves, vert, park, n, draw = grid.moves, index.vert, index.park, index.n, rng.random
    for spare in spares:
        for _ in range(8 * k if walks is None else walks):
            if len(chosen) >= k:
                break
            t = rng.randrange(len(path))
            c = path[t]
            budget = len(path) - 1 - t
            # walk while the goal stays reachable ``spare`` steps before the robot's current arrival (the
            # loop is the generator's whole cost, up to 16k walks: it reads the index inline, as
            # ``occupants`` does, draws with ``random()``, a tenth of ``choice``'s cost, and takes the moves
            # whose distance to the goal is at most ``reach`` from ``Grid.walk_tier``)
            while budget > spare and len(chosen) < k:
                slack = budget - 1 - spare - dist[c]
                if slack > 0:
                    options = moves(c)
                elif slack >= -1:
                    tier = tiers[c] or tier_of(goal, c)
                    options = tier[slack + 1]
                    if not options:
                        break
                else:
                    break
                c = options[int(draw() * len(options))]
                t += 1
                budget -= 1
                met = vert.get(t * n + c, ())
                parked = park.get(c)
                if parked is not None and parked[1] <= t:
                    met = (*met, parked[0])
                for j in met:
                    if j not in seen and (eligible is None or j in eligible):
                        seen.add(j)
                        chosen.append(j)
    return chosen[:k]


def intersection(
    grid: Grid,
    paths: Sequence[Path],
    starts: Sequence[int],
    goals: Sequence[int],
    k: int,
    rng: random.Random,
    tabu: set[int],
    index: OccupancyIndex,
) -> list[int]:
    """Robots visiting an intersection vertex, growing over nearby intersections (BFS) until k."""

    def visitors(c: int) -> list[int]:
        robots = set(index.visits.get(c, ()))
        if c in index.park:
            robots.add(index.park[c][0])
        return sorted(robots)

    hubs = [c for c in grid.intersections() if c in index.visits or c in index.park]
    if not hubs:
        return []
    root = rng.choice(hubs)
    chosen: list[int] = []
    seen_robots: set[int] = set()
    seen_cells = {root}
    queue = deque([root])
    while queue and len(chosen) < k:
        c = queue.popleft()
        if len(grid.moves(c)) - 1 >= 3:
            robots = [r for r in visitors(c) if r not in seen_robots]
            rng.shuffle(robots)
            for r in robots[: k - len(chosen)]:
                seen_robots.add(r)
                chosen.append(r)
        for nb in grid.moves(c):
            if nb not in seen_cells:
                seen_cells.add(nb)
                queue.append(nb)
    return chosen


def uniform(
    grid: Grid,
    paths: Sequence[Path],
    starts: Sequence[int],
    goals: Sequence[int],
    k: int,
    rng: random.Random,
    tabu: set[int],
    index: OccupancyIndex,
) -> list[int]:
    return rng.sample(range(len(paths)), min(k, len(paths)))


GENERATORS: dict[str, Generator] = {
    "agent": random_walk_from_delayed,
    "intersection": intersection,
    "random": uniform,
}


@dataclass
class AdaptiveWeights:
    """ALNS roulette wheel: choose a generator with probability ∝ its weight; reward by relative gain."""

    names: list[str]
    reaction: float = 0.1
    floor: float = 0.01
    weights: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for n in self.names:
            self.weights.setdefault(n, 1.0)

    def choose(self, rng: random.Random) -> str:
        return rng.choices(self.names, weights=[self.weights[n] for n in self.names])[0]

    def reward(self, name: str, gain: float) -> None:
        w = self.weights[name]
        self.weights[name] = max(self.floor, (1 - self.reaction) * w + self.reaction * max(0.0, gain))
