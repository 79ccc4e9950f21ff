"""The reservation table's shortcuts against the plain operations they replace.

``add_path`` is ``add_run(0, path, arrives=True)`` without the copy; ``checkpoint`` / ``rollback`` keep the
safe intervals cached before a trial whose changes were undone. Both must leave exactly the table (and
only valid cached intervals) that the plain way leaves.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.routing.grid import Grid
from tasks.routing.reservations import Reservations
from tasks.routing.sipp import safe_intervals

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _paths(grid: Grid, rng: random.Random, count: int) -> list[tuple[int, ...]]:
    """Random walks (waits included) with distinct goals, as a plan's paths are."""
    out: list[tuple[int, ...]] = []
    goals: set[int] = set()
    for _ in range(count):
        c = rng.randrange(grid.n_cells)
        path = [c]
        for _ in range(rng.randint(0, 9)):
            c = rng.choice(grid.moves(c))
            path.append(c)
        while len(path) > 1 and path[-1] == path[-2]:
            path.pop()
        if path[-1] not in goals:
            goals.add(path[-1])
            out.append(tuple(path))
    return out


def _fill(table: Reservations, rng: random.Random) -> None:
    """Cache some cells' intervals, as SIPP does while it searches."""
    for c in rng.sample(range(table.n), table.n // 2):
        iv = safe_intervals(table, c)
        table.intervals[c] = (iv, [b for _, b in iv])


def _state(table: Reservations) -> tuple[object, ...]:
    visits = {c: sorted(v) for c, v in table.visits.items() if v}
    return table.vert, table.edge, table.park, visits, table.t_static


def _stale(table: Reservations) -> list[int]:
    return [c for c, (iv, _ends) in table.intervals.items() if iv != safe_intervals(table, c)]


@FAST
@given(width=st.integers(1, 6), height=st.integers(1, 6), count=st.integers(1, 8), seed=st.integers(0, 10**6))
def test_add_path_is_add_run_of_the_whole_path(width: int, height: int, count: int, seed: int) -> None:
    rng = random.Random(seed)
    grid = Grid.from_rows(["." * width] * height)
    a, b = Reservations(grid.n_cells), Reservations(grid.n_cells)
    for p in _paths(grid, rng, count):
        a.add_path(p)
        b.add_run(0, list(p), arrives=True)
    assert _state(a) == _state(b)


@FAST
@given(
    width=st.integers(1, 6),
    height=st.integers(1, 6),
    count=st.integers(2, 10),
    keep=st.booleans(),
    seed=st.integers(0, 10**6),
)
def test_rollback_keeps_only_valid_cached_intervals(
    width: int, height: int, count: int, keep: bool, seed: int
) -> None:
    """A trial takes some paths out, puts others in, searches in between (filling the cache), then is
    undone and rolled back, or kept and released: no cached interval is stale, and an undone trial
    leaves the cache it found."""
    rng = random.Random(seed)
    grid = Grid.from_rows(["." * width] * height)
    paths = _paths(grid, rng, count)
    if len(paths) < 2:
        return
    table = Reservations(grid.n_cells)
    cut = rng.randint(1, len(paths) - 1)
    mine, others = paths[:cut], paths[cut:]
    for p in others:
        table.add_path(p)
    _fill(table, rng)
    before = dict(table.intervals)
    table.checkpoint()
    taken = others[: rng.randint(1, len(others))]
    for p in taken:  # the group leaves...
        table.remove_path(p)
        _fill(table, rng)
    for p in mine:  # ...and new paths come in, searched against in between
        table.add_path(p)
        _fill(table, rng)
    if keep:
        table.release()
    else:
        for p in mine:
            table.remove_path(p)
        for p in taken:
            table.add_path(p)
        table.rollback()
        assert all(table.intervals.get(c) == entry for c, entry in before.items())
    assert _stale(table) == []
