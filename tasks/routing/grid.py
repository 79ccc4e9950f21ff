"""The 4-connected grid: cells as ints ``y * width + x``, neighbour lists and cached BFS distances.

Cells are plain ints so that the occupancy index and the A* search key dicts by
``t * n_cells + cell`` without building tuples in the inner loops.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

UNREACHABLE = -1

WalkTier = tuple[tuple[int, ...], tuple[int, ...]]
"""A cell's moves that end closer to a goal, and those that end no farther (``Grid.walk_tier``)."""


@dataclass(eq=False)
class Grid:
    """A rectangular map; ``free[c]`` is True for passable cells."""

    width: int
    height: int
    free: tuple[bool, ...]
    name: str = "grid"
    _moves: list[tuple[int, ...]] = field(default_factory=list, repr=False)
    _steps: list[tuple[int, ...]] = field(default_factory=list, repr=False)
    """``_moves`` without the wait: the neighbours SIPP steps to (it waits inside an interval)."""
    _dist: dict[int, list[int]] = field(default_factory=dict, repr=False)
    _dist_arrays: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _intersections: list[int] | None = field(default=None, repr=False)
    _walks: dict[int, list[WalkTier | None]] = field(default_factory=dict, repr=False)
    step_array: np.ndarray = field(default_factory=lambda: np.empty((0, 4), np.int64), repr=False)
    """``_steps`` as a [cell, 4] array padded with -1, for the compiled SIPP."""

    def __post_init__(self) -> None:
        if len(self.free) != self.width * self.height:
            raise ValueError("free mask does not match width x height")
        w, h = self.width, self.height
        moves: list[tuple[int, ...]] = []
        for c in range(w * h):
            if not self.free[c]:
                moves.append(())
                continue
            x, y = c % w, c // w
            out = [c]  # waiting is always a move
            for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                if 0 <= nx < w and 0 <= ny < h and self.free[ny * w + nx]:
                    out.append(ny * w + nx)
            moves.append(tuple(out))
        self._moves = moves
        self._steps = [m[1:] for m in moves]
        self.step_array = np.full((w * h, 4), -1, np.int64)
        for c, steps in enumerate(self._steps):
            self.step_array[c, : len(steps)] = steps

    @classmethod
    def from_rows(cls, rows: list[str], name: str = "grid") -> Grid:
        """Rows of characters, ``.`` (or ``G``) free and anything else blocked."""
        height, width = len(rows), len(rows[0]) if rows else 0
        free = tuple(ch in ".G" for row in rows for ch in row)
        return cls(width, height, free, name)

    @property
    def n_cells(self) -> int:
        return self.width * self.height

    def cell(self, x: int, y: int) -> int:
        return y * self.width + x

    def path_cells(self, xys: Iterable[Sequence[int]]) -> tuple[int, ...]:
        """A path of (x, y) pairs as cells: ``cell`` inlined, since an agent decodes every path of its
        contract on every call (300 at k = 300)."""
        width = self.width
        return tuple([y * width + x for x, y in xys])

    def xy(self, c: int) -> tuple[int, int]:
        return c % self.width, c // self.width

    def inside(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height

    def moves(self, c: int) -> tuple[int, ...]:
        """The cells reachable in one step from ``c``, itself (wait) first."""
        return self._moves[c]

    def intersections(self) -> list[int]:
        """The free cells with three or more neighbours, ascending (cached: MAPF-LNS's intersection
        heuristic starts from one at every step)."""
        if self._intersections is None:
            self._intersections = [c for c, steps in enumerate(self._steps) if len(steps) >= 3]
        return self._intersections

    def rows(self) -> list[str]:
        w = self.width
        return ["".join("." if self.free[y * w + x] else "@" for x in range(w)) for y in range(self.height)]

    def distances(self, goal: int) -> list[int]:
        """4-connected BFS distance of every cell to ``goal`` (UNREACHABLE if none); cached per goal."""
        cached = self._dist.get(goal)
        if cached is not None:
            return cached
        dist = [UNREACHABLE] * self.n_cells
        dist[goal] = 0
        queue = deque([goal])
        moves = self._moves
        while queue:
            c = queue.popleft()
            d = dist[c] + 1
            for n in moves[c]:
                if dist[n] == UNREACHABLE:
                    dist[n] = d
                    queue.append(n)
        self._dist[goal] = dist
        return dist

    def walk_options(self, goal: int) -> list[WalkTier | None]:
        """Per cell, ``walk_tier(goal, cell)`` once asked (None before): kept for every goal walked to, one
        list of cells each, as ``distances`` keeps its own."""
        got = self._walks.get(goal)
        if got is None:
            got = self._walks[goal] = [None] * self.n_cells
        return got

    def walk_tier(self, goal: int, cell: int) -> WalkTier:
        """The moves from ``cell`` (in ``moves`` order, the wait first) that end one step closer to ``goal``,
        and those that end no farther. A neighbour's distance is the cell's plus or minus one, so a walk that
        must keep ``goal`` within ``reach`` steps (``destroy.walk_from``) may take every move when reach is
        past the cell's distance, the no-farther ones at it, the closer ones one below, and none further
        down: one lookup a step instead of a test per neighbour (a lease's walks: 0.60 to 0.38 ms warm)."""
        dist = self.distances(goal)
        d = dist[cell]
        moves = self._moves[cell]
        tier = (tuple(m for m in moves if dist[m] == d - 1), tuple(m for m in moves if dist[m] <= d))
        self.walk_options(goal)[cell] = tier
        return tier

    def distance_array(self, goal: int) -> np.ndarray:
        """``distances(goal)`` as an int64 array (cached per goal), for the compiled SIPP."""
        cached = self._dist_arrays.get(goal)
        if cached is None:
            cached = self._dist_arrays[goal] = np.asarray(self.distances(goal), np.int64)
        return cached

    def shortest_path(self, start: int, goal: int) -> list[int]:
        """One shortest path (following the BFS gradient), or [] when the goal is unreachable."""
        dist = self.distances(goal)
        if dist[start] == UNREACHABLE:
            return []
        path = [start]
        c = start
        while c != goal:
            c = min((n for n in self._moves[c] if dist[n] != UNREACHABLE), key=dist.__getitem__)
            path.append(c)
        return path
