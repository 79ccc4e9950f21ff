"""The one space-time A* (``astar.plan_path``) against an exhaustive oracle, for both of its priorities.

The oracle is a dynamic program over every (time, cell) up to ``max_len`` with no collapsing of times
and no pruning: the fewest conflicts of any walk that is at a cell at a time, then, per arrival time T,
those conflicts plus the later visits a robot parked on the goal from T would meet. The search must
return a path whose own cost (checked on the table, not taken from the search) is the oracle's optimum:
(conflicts, arrival) in that order with ``penalty=None``, arrival + penalty x conflicts otherwise.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.routing.astar import plan_path
from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.occupancy import Path, cost
from tasks.routing.reservations import Reservations

INF = 1 << 60


def _grid(width: int, height: int, density: float, rng: random.Random) -> Grid:
    rows = ["".join("@" if rng.random() < density else "." for _ in range(width)) for _ in range(height)]
    return Grid.from_rows(rows)


def _step_conflicts(table: Reservations, t: int, a: int, b: int) -> int:
    """Conflicts met stepping a -> b between t and t + 1 (vertex at t + 1, parked robot, swap)."""
    n = table.n
    c = table.vert.get((t + 1) * n + b, 0)
    park = table.park.get(b)
    if park is not None and park <= t + 1:
        c += 1
    if a != b:
        c += table.edge.get((t * n + b) * n + a, 0)
    return c


def oracle(grid: Grid, start: int, goal: int, table: Reservations, max_len: int) -> dict[int, int]:
    """Arrival time T -> the fewest conflicts of a path parked on the goal from T (every T reachable)."""
    best = {start: 0}
    visits = table.visits.get(goal, [])
    out: dict[int, int] = {}
    for t in range(max_len + 1):
        if goal in best:
            out[t] = best[goal] + sum(1 for v in visits if v > t)
        nxt: dict[int, int] = {}
        for a, conf in best.items():
            for b in grid.moves(a):
                c = conf + _step_conflicts(table, t, a, b)
                if c < nxt.get(b, INF):
                    nxt[b] = c
        best = nxt
    return out


def _optimum(by_arrival: dict[int, int], penalty: int | None) -> tuple[int, int]:
    """The oracle's best (conflicts, arrival) under the search's order."""
    if penalty is None:
        return min((c, t) for t, c in by_arrival.items())
    return min(by_arrival.items(), key=lambda tc: (tc[0] + penalty * tc[1], tc[1]))[::-1]


def _value(path: Path, conflicts: int, penalty: int | None) -> tuple[int, ...]:
    return (conflicts, cost(path)) if penalty is None else (cost(path) + penalty * conflicts,)


def _random_table(grid: Grid, rng: random.Random, start: int, goal: int, others: int) -> Reservations:
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    table = Reservations(grid.n_cells)
    for _ in range(others):
        c = rng.choice(free)
        run = [c]
        for _ in range(rng.randint(0, 8)):
            c = rng.choice(grid.moves(c))
            run.append(c)
        t0 = rng.randint(0, 2)
        if t0 == 0 and run[0] == start:
            t0 = 1  # as in a MAPF instance: nobody else is on our start at t=0
        table.add_run(t0, run, arrives=run[-1] != goal and rng.random() < 0.5)
    return table


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    width=st.integers(2, 6),
    height=st.integers(2, 6),
    density=st.sampled_from([0.0, 0.15, 0.3]),
    others=st.integers(0, 8),
    penalty=st.sampled_from([None, 1, 2, 4]),
    seed=st.integers(0, 10**6),
)
def test_search_is_optimal_for_its_priority(
    width: int, height: int, density: float, others: int, penalty: int | None, seed: int
) -> None:
    rng = random.Random(seed)
    grid = _grid(width, height, density, rng)
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    if len(free) < 2:
        return
    start, goal = rng.sample(free, 2)
    table = _random_table(grid, rng, start, goal, others)
    max_len = 2 * grid.n_cells + 12
    found = plan_path(grid, start, goal, table, max_len, expansions=10**7, penalty=penalty)
    if grid.distances(goal)[start] == UNREACHABLE:
        assert found is None
        return
    assert found is not None
    path, conflicts = found
    assert path[0] == start and path[-1] == goal
    assert all(b in grid.moves(a) for a, b in zip(path, path[1:], strict=False))
    assert table.path_conflicts(path) == conflicts, "the search misreports its path's conflicts"
    want = _optimum(oracle(grid, start, goal, table, max_len), penalty)
    want_value = want if penalty is None else (want[1] + penalty * want[0],)
    assert _value(path, conflicts, penalty) == want_value


def test_oracle_catches_a_search_that_ignores_swaps() -> None:
    """The comparison can fail: the straight path through a head-on robot costs more than the optimum."""
    grid = Grid.from_rows(["....", "...."])
    table = Reservations(grid.n_cells)
    table.add_path(tuple(grid.cell(x, 0) for x in (3, 2, 1, 0)))  # head-on along row 0
    start, goal = grid.cell(0, 0), grid.cell(3, 0)
    straight = tuple(grid.cell(x, 0) for x in range(4))
    want = _optimum(oracle(grid, start, goal, table, 20), None)
    assert want[0] == 0  # side-stepping through row 1 avoids the robot...
    assert table.path_conflicts(straight) > 0  # ...the straight line swaps with it
    assert (table.path_conflicts(straight), cost(straight)) > want
    found = plan_path(grid, start, goal, table, 20)
    assert found is not None and (found[1], cost(found[0])) == want


@pytest.mark.parametrize("penalty", [1, 4])
def test_small_penalty_prefers_a_collision_to_a_long_detour(penalty: int) -> None:
    """A robot parked in a corridor: the lexicographic search takes the long way round, a penalty smaller
    than the detour goes through (the trade the repair relies on to stay fast)."""
    grid = Grid.from_rows(["......", ".@@@@.", "......"])
    table = Reservations(grid.n_cells)
    table.add_path((grid.cell(2, 0),))  # parked on the short way
    start, goal = grid.cell(0, 0), grid.cell(4, 0)
    lex = plan_path(grid, start, goal, table, 40)
    soft = plan_path(grid, start, goal, table, 40, penalty=penalty)
    assert lex is not None and soft is not None
    assert lex[1] == 0 and cost(lex[0]) == 10
    assert soft[1] == 1 and cost(soft[0]) == 4
