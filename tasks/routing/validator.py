"""An independent plan checker: shares no code with the scorer, on purpose.

It simulates the plan time step by time step on plain ``(x, y)`` tuples, so a
bug in the occupancy index cannot hide itself. A plan is valid iff each path
starts at its start, ends at its goal (staying there), moves only to a
4-neighbour or waits, never enters a blocked cell, and has no vertex or edge
conflict. Conflicts are counted per robot pair and time step, as the objective does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

XY = tuple[int, int]


@dataclass
class PlanCheck:
    valid: bool
    soc: int
    vertex_conflicts: list[tuple[int, int, int, XY]] = field(default_factory=list)
    """(t, robot i, robot j, cell) with i < j."""
    edge_conflicts: list[tuple[int, int, int, XY, XY]] = field(default_factory=list)
    """(t, i, j, a, b): i steps a -> b while j steps b -> a between t and t+1."""
    errors: list[str] = field(default_factory=list)

    @property
    def conflicts(self) -> int:
        return len(self.vertex_conflicts) + len(self.edge_conflicts)


def arrival(path: Sequence[XY]) -> int:
    """The time from which the robot stays at its last cell."""
    t = len(path) - 1
    while t > 0 and tuple(path[t - 1]) == tuple(path[-1]):
        t -= 1
    return t


def validate_plan(
    rows: Sequence[str], starts: Sequence[XY], goals: Sequence[XY], paths: Sequence[Sequence[XY]]
) -> PlanCheck:
    """Check a whole plan against a map given as rows of characters (``.``/``G`` free)."""
    errors: list[str] = []
    height, width = len(rows), len(rows[0]) if rows else 0

    def free(p: XY) -> bool:
        x, y = p
        return 0 <= x < width and 0 <= y < height and rows[y][x] in ".G"

    if not (len(paths) == len(starts) == len(goals)):
        errors.append(f"{len(paths)} paths for {len(starts)} robots")
        return PlanCheck(False, 0, errors=errors)
    plan: list[list[XY]] = []
    for i, path in enumerate(paths):
        p = [(int(a), int(b)) for a, b in path]
        plan.append(p)
        if not p:
            errors.append(f"robot {i}: empty path")
            continue
        if p[0] != tuple(starts[i]):
            errors.append(f"robot {i}: starts at {p[0]}, not at its start {tuple(starts[i])}")
        if p[-1] != tuple(goals[i]):
            errors.append(f"robot {i}: ends at {p[-1]}, not at its goal {tuple(goals[i])}")
        for t, cell in enumerate(p):
            if not free(cell):
                errors.append(f"robot {i}: cell {cell} at time {t} is blocked or off the map")
            if t and abs(cell[0] - p[t - 1][0]) + abs(cell[1] - p[t - 1][1]) > 1:
                errors.append(f"robot {i}: jumps from {p[t - 1]} to {cell} at time {t}")
    if errors:
        return PlanCheck(False, 0, errors=errors)

    def at(i: int, t: int) -> XY:
        p = plan[i]
        return p[t] if t < len(p) else p[-1]

    horizon = max(len(p) for p in plan)
    vertex: list[tuple[int, int, int, XY]] = []
    edge: list[tuple[int, int, int, XY, XY]] = []
    n = len(plan)
    for t in range(horizon + 1):
        where: dict[XY, list[int]] = {}
        for i in range(n):
            where.setdefault(at(i, t), []).append(i)
        for cell, robots in where.items():
            for x in range(len(robots)):
                for y in range(x + 1, len(robots)):
                    vertex.append((t, robots[x], robots[y], cell))
        if t == horizon:
            break
        steps: dict[tuple[XY, XY], list[int]] = {}
        for i in range(n):
            here, there = at(i, t), at(i, t + 1)
            if here != there:
                steps.setdefault((here, there), []).append(i)
        for (here, there), movers in steps.items():
            if here < there:
                for i in movers:
                    for j in steps.get((there, here), []):
                        edge.append((t, min(i, j), max(i, j), here, there))
    # after the horizon every robot stays at its goal: only shared goals could still meet
    soc = sum(arrival(p) for p in plan)
    return PlanCheck(not vertex and not edge, soc, vertex, edge)
