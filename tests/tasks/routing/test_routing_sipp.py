"""SIPP against space-time A*: the same earliest conflict-free arrival on random small instances.

Space-time A* (``astar.plan_path``) minimizes (conflicts, arrival); whenever it
finds a conflict-free path, SIPP must find one that arrives at the same time,
and when every path conflicts SIPP must say there is none.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.routing.astar import plan_path
from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.occupancy import cost
from tasks.routing.reservations import Reservations
from tasks.routing.sipp import INF, safe_intervals, sipp_path, sipp_search
from tests.routing_reference import reference_sipp_path


def _grid(width: int, height: int, density: float, rng: random.Random) -> Grid:
    rows = ["".join("@" if rng.random() < density else "." for _ in range(width)) for _ in range(height)]
    return Grid.from_rows(rows)


def _walk(grid: Grid, rng: random.Random, free: list[int], length: int) -> list[int]:
    c = rng.choice(free)
    path = [c]
    for _ in range(length):
        c = rng.choice(grid.moves(c))
        path.append(c)
    return path


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    width=st.integers(2, 7),
    height=st.integers(2, 7),
    density=st.sampled_from([0.0, 0.15, 0.3]),
    others=st.integers(0, 6),
    seed=st.integers(0, 10**6),
    salt=st.sampled_from([0, 1, 977]),
)
def test_sipp_arrives_when_space_time_astar_does(
    width: int, height: int, density: float, others: int, seed: int, salt: int
) -> None:
    rng = random.Random(seed)
    grid = _grid(width, height, density, rng)
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    if len(free) < 2:
        return
    start, goal = rng.sample(free, 2)
    if grid.distances(goal)[start] == UNREACHABLE:
        assert sipp_path(grid, start, goal, Reservations(grid.n_cells), 40) is None
        return
    table = Reservations(grid.n_cells)
    for _ in range(others):
        # as in a MAPF instance: nobody else is on our start at t=0 or parks on our goal
        run = _walk(grid, rng, free, rng.randint(0, 8))
        t0 = rng.randint(0, 2)
        if t0 == 0 and run[0] == start:
            t0 = 1
        table.add_run(t0, run, arrives=run[-1] != goal and rng.random() < 0.5)
    max_len = 3 * grid.n_cells + 12
    astar = plan_path(grid, start, goal, table, max_len, expansions=10**7)
    sipp = sipp_path(grid, start, goal, table, max_len, expansions=10**7, salt=salt)
    if astar is not None and astar[1] == 0:
        assert sipp is not None, "A* found a conflict-free path, SIPP none"
        assert cost(sipp) == cost(astar[0])
    else:
        assert sipp is None, f"SIPP found {sipp} where A* has {astar}"
    if sipp is not None:
        assert sipp[0] == start and sipp[-1] == goal
        assert all(b in grid.moves(a) for a, b in zip(sipp, sipp[1:]))
        assert table.path_conflicts(sipp) == 0


def test_a_salt_picks_among_the_shortest_paths_and_none_keeps_one() -> None:
    """On an open grid corner to corner there are C(10, 5) shortest paths: salts must reach several
    (the LNS's way off a plateau of equal costs), all shortest; no salt must always give the same."""
    grid = Grid.from_rows(["......"] * 6)
    table = Reservations(grid.n_cells)
    start, goal = 0, grid.n_cells - 1
    salted = {sipp_path(grid, start, goal, table, 40, salt=s) for s in range(1, 21)}
    assert len(salted) >= 5
    assert {len(p) for p in salted if p is not None} == {11}
    assert len({sipp_path(grid, start, goal, table, 40) for _ in range(5)}) == 1


def test_sipp_waits_out_a_robot_in_a_corridor() -> None:
    """A one-cell-wide corridor with a robot passing through: SIPP waits, arriving later than the BFS distance."""
    grid = Grid.from_rows(["....."])
    table = Reservations(grid.n_cells)
    table.add_run(0, [4, 3, 2, 1, 0], arrives=False)  # another robot sweeps the corridor right to left
    path = sipp_path(grid, 0, 4, table, 30)
    assert path is None  # a head-on robot in a 1-wide corridor cannot be passed without a conflict
    table = Reservations(grid.n_cells)
    table.add_run(1, [2, 2, 2], arrives=False)  # someone stands in the middle at t=1..3
    path = sipp_path(grid, 0, 4, table, 30)
    assert path is not None and cost(path) > 4 and table.path_conflicts(path) == 0


def test_safe_intervals_cut_at_visits_and_parking() -> None:
    table = Reservations(4)
    table.add_run(2, [1, 1], arrives=False)
    table.add_run(0, [3, 2], arrives=True)  # parks on cell 2 from t=1
    assert safe_intervals(table, 1) == [(0, 1), (4, INF)]
    assert safe_intervals(table, 2) == [(0, 0)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    width=st.integers(2, 8),
    height=st.integers(2, 8),
    density=st.sampled_from([0.0, 0.15, 0.3]),
    others=st.integers(0, 12),
    slack=st.integers(-2, 6),
    seed=st.integers(0, 10**6),
)
def test_the_rewrite_returns_the_paths_of_the_old_sipp(
    width: int, height: int, density: float, others: int, slack: int, seed: int
) -> None:
    """Int-keyed nodes, no closed set, the one-step swap check and the arrival bound change no answer:
    the very same path as the SIPP they replaced, from a cold and from a shared interval cache; with a
    bound, that path when it arrives in time and a proven None otherwise."""
    rng = random.Random(seed)
    grid = _grid(width, height, density, rng)
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    if len(free) < 2:
        return
    table = Reservations(grid.n_cells)
    starts = rng.sample(free, 2)
    for _ in range(others):
        run = _walk(grid, rng, free, rng.randint(0, 10))
        t0 = rng.randint(0, 3)
        if t0 == 0 and run[0] in starts:
            t0 = 1
        table.add_run(t0, run, arrives=run[-1] not in starts and rng.random() < 0.5)
    max_len = 3 * grid.n_cells + 12
    for start, goal in (starts, starts[::-1]):
        old = reference_sipp_path(grid, start, goal, table.copy(), max_len, expansions=10**7)
        assert sipp_path(grid, start, goal, table, max_len, expansions=10**7) == old
        assert sipp_path(grid, start, goal, table, max_len, expansions=10**7) == old  # warm cache
        if grid.distances(goal)[start] == UNREACHABLE:
            continue
        bound = grid.distances(goal)[start] + slack
        got, proof = sipp_search(grid, start, goal, table, max_len, expansions=10**7, bound=bound)
        assert proof
        assert got == (old if old is not None and cost(old) <= bound else None)
