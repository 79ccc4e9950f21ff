"""The reservation table's shortcuts against the plain operations they replace.

``add_path`` is ``add_run(0, path, arrives=True)`` without the copy, and ``remove_path`` its undo (with the
decrements inlined): both must leave exactly the table that the plain way leaves.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.routing.grid import Grid
from tasks.routing.reservations import Reservations, pair_conflicts
from tests.routing_reference import mirror_matches

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


def _state(table: Reservations) -> tuple[object, ...]:
    visits = {c: sorted(v) for c, v in table.visits.items() if v}
    return table.vert, table.edge, table.park, visits, table.t_static


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
    width=st.integers(1, 6), height=st.integers(1, 6), count=st.integers(2, 10), seed=st.integers(0, 10**6)
)
def test_remove_path_leaves_the_table_of_the_paths_that_stay(
    width: int, height: int, count: int, seed: int
) -> None:
    rng = random.Random(seed)
    grid = Grid.from_rows(["." * width] * height)
    paths = _paths(grid, rng, count)
    gone = rng.sample(paths, rng.randint(0, len(paths)))
    table, expected = Reservations(grid.n_cells), Reservations(grid.n_cells)
    for p in paths:
        table.add_path(p)
    for p in gone:
        table.remove_path(p)
    for p in paths:
        if p not in gone:
            expected.add_run(0, list(p), arrives=True)
    assert _state(table)[:4] == _state(expected)[:4]  # t_static is an upper bound: removals leave it


@FAST
@given(width=st.integers(1, 6), height=st.integers(1, 6), count=st.integers(1, 8), seed=st.integers(0, 10**6))
def test_deferred_path_changes_leave_the_dicts_of_eager_ones(
    width: int, height: int, count: int, seed: int
) -> None:
    """With a mirror, path changes reach the dicts only when they are read (an LNS step turned down is
    undone before anyone looks). Robots switch between two paths to one goal (as a re-plan does), leave
    and come back; at random moments the dicts are read; they must always be the eager table's."""
    rng = random.Random(seed)
    grid = Grid.from_rows(["." * width] * height)
    # a path, the same waiting first, and waiting one step later: the last two park at the same time
    variants = [(p, (p[0], *p), (*p[:2], *p[1:])) for p in _paths(grid, rng, count)]
    lazy, eager = Reservations(grid.n_cells), Reservations(grid.n_cells)
    lazy.arrays(grid.width)
    placed: dict[int, tuple[int, ...]] = {}
    for _ in range(40):
        robot = rng.randrange(len(variants))
        now = placed.pop(robot, None)
        if now is not None:
            lazy.remove_path(now)
            eager.remove_path(now)
        if now is None or rng.random() < 0.7:
            new = rng.choice(variants[robot])
            lazy.add_path(new)
            eager.add_path(new)
            placed[robot] = new
        if rng.random() < 0.15:
            assert _state(lazy) == _state(eager)
    assert _state(lazy) == _state(eager)
    assert mirror_matches(lazy, grid.width)


def _variant(grid: Grid, path: tuple[int, ...], rng: random.Random) -> tuple[int, ...]:
    """Another path of the same robot (same start and goal): a wait, or a step aside and back, somewhere."""
    t = rng.randrange(len(path))
    c = path[t]
    if rng.random() < 0.5 or not grid.moves(c):
        return (*path[: t + 1], c, *path[t + 1 :])
    aside = rng.choice(grid.moves(c))
    return (*path[: t + 1], aside, c, *path[t + 1 :])


@FAST
@given(width=st.integers(1, 5), height=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_pair_conflicts_are_those_with_a_table_of_that_one_path(width: int, height: int, seed: int) -> None:
    """Every rule of ``path_conflicts`` (both in a cell, a cell where the other is parked, a swap, passing
    a parked path's goal) for two paths, without building a table."""
    rng = random.Random(seed)
    grid = Grid.from_rows(["." * width] * height)
    for _ in range(20):
        path, other = (_paths(grid, rng, 1) + _paths(grid, rng, 1) + [(0,), (0,)])[:2]
        table = Reservations(grid.n_cells)
        table.add_path(other)
        assert pair_conflicts(grid.n_cells, path, other) == table.path_conflicts(path)


@FAST
@given(width=st.integers(1, 6), height=st.integers(1, 6), count=st.integers(1, 8), seed=st.integers(0, 10**6))
def test_conflicts_without_a_held_path_are_those_after_taking_it_out(
    width: int, height: int, count: int, seed: int
) -> None:
    """``path_conflicts_without(path, held)``, for ``path`` another of ``held``'s robot's paths, is what
    ``path_conflicts(path)`` counts once ``held`` is out of the table, and the table is left as it was."""
    rng = random.Random(seed)
    grid = Grid.from_rows(["." * width] * height)
    plan = _paths(grid, rng, count)
    table = Reservations(grid.n_cells)
    if rng.random() < 0.5:
        table.arrays(grid.width)  # with a mirror: changes wait in ``deferred``
    for p in plan:
        table.add_path(p)
    for held in plan:
        path = _variant(grid, held, rng)
        before = _state(table)
        got = table.path_conflicts_without(path, held)
        assert _state(table) == before
        table.remove_path(held)
        assert got == table.path_conflicts(path)
        table.add_path(held)


@FAST
@given(width=st.integers(1, 6), height=st.integers(1, 6), count=st.integers(1, 8), seed=st.integers(0, 10**6))
def test_conflicts_read_off_the_mirror_are_the_dicts_and_leave_changes_deferred(
    width: int, height: int, count: int, seed: int
) -> None:
    """With a mirror, ``path_conflicts`` counts off the arrays what the eager table's dicts count, for any
    path (waits, swaps, a goal others pass through, paths longer than the arrays), without replaying the
    deferred changes into the dicts."""
    rng = random.Random(seed)
    grid = Grid.from_rows(["." * width] * height)
    plan = _paths(grid, rng, count)
    lazy, eager = Reservations(grid.n_cells), Reservations(grid.n_cells)
    lazy.arrays(grid.width)
    for p in plan:
        lazy.add_path(p)
        eager.add_path(p)
    gone = rng.sample(plan, rng.randint(0, len(plan)))
    for p in gone:
        lazy.remove_path(p)
        eager.remove_path(p)
    probes = [_variant(grid, p, rng) for p in plan] + _paths(grid, rng, 6)
    probes.append((0,) * 70 + (grid.n_cells - 1,))  # past the mirror's first horizon (64)
    for path in probes:
        assert lazy.path_conflicts(path) == eager.path_conflicts(path), path
    assert lazy.deferred or len(gone) == len(plan)
