"""A stale proposal settled against the current plan (tasks/routing/rebase.py): what collides goes back,
what still fits and gains is kept, without a search.

Paths here are sequences of abstract cells (the occupancy index needs no grid): robot r is at
``path[t]`` at time t and parks at its last cell.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.routing.occupancy import OccupancyIndex, Path, conflicts_among, cost, scan_change
from tasks.routing.rebase import drop_colliding, keep_what_fits

CELLS = 100


def index_of(paths: list[Path]) -> OccupancyIndex:
    return OccupancyIndex.build(CELLS, dict(enumerate(paths)))


def test_a_colliding_robot_goes_back_and_so_does_one_moved_aside_for_it() -> None:
    """Robot 0's new path crosses robot 2 (merged meanwhile); robot 1 had stepped aside for robot 0 (its
    new path is dearer) and its current path fits again; robot 3's shortcut fits on its own and stays."""
    current: list[Path] = [(1, 2, 3), (10, 11, 12), (70, 71, 72), (80, 81, 81, 82)]
    written = {0: (1, 71, 3), 1: (10, 13, 14, 12), 3: (80, 81, 82)}
    kept = drop_colliding(index_of(current), current, written)
    assert kept == {3: (80, 81, 82)}
    assert sum(cost(p) - cost(current[r]) for r, p in kept.items()) == -1


def test_a_robot_moved_aside_stays_where_its_current_path_no_longer_fits() -> None:
    """Robot 3's new path now runs through cell 11 at time 1, where robot 1's current path is: robot 1
    keeps its detour (dearer, but putting it back would collide with what is kept)."""
    current: list[Path] = [(1, 2, 3), (10, 11, 12), (70, 71, 72), (80, 81, 81, 82)]
    written = {0: (1, 71, 3), 1: (10, 13, 14, 12), 3: (80, 11, 82)}
    kept = drop_colliding(index_of(current), current, written)
    assert kept == {1: (10, 13, 14, 12), 3: (80, 11, 82)}


def test_dropping_runs_until_nothing_collides() -> None:
    """Robot 0 goes back (its new path crosses robot 2); its current path then crosses robot 1's new
    path at cell 2, time 1, so robot 1 goes back too, though its new path was cheaper."""
    current: list[Path] = [(1, 2, 3), (40, 41, 42, 43, 44), (70, 71, 72)]
    written = {0: (1, 71, 3), 1: (40, 2, 44)}
    assert drop_colliding(index_of(current), current, written) == {}


def test_nothing_colliding_is_kept_whole() -> None:
    current: list[Path] = [(1, 2, 3), (10, 11, 12, 12)]
    written = {0: (1, 3), 1: (10, 12)}
    assert drop_colliding(index_of(current), current, written) == written


def full_recheck(index: OccupancyIndex, current: list[Path], written: dict[int, Path]) -> dict[int, Path]:
    """What ``drop_colliding`` must equal: every kept robot checked again on every pass."""
    kept = dict(written)
    among = OccupancyIndex.build(index.n, kept)
    while kept:
        out = set(kept)
        colliding = [
            r
            for r, p in kept.items()
            if index.cross_conflicts({r: p}, out) or among.cross_conflicts({r: p}, {r})
        ]
        if not colliding:
            break
        for r in colliding:
            among.remove(r, kept.pop(r))
    for r in sorted(kept, key=lambda r: cost(current[r]) - cost(kept[r])):
        if cost(kept[r]) <= cost(current[r]):
            break
        if not among.cross_conflicts({r: current[r]}, {r}):
            among.remove(r, kept.pop(r))
    return kept


@st.composite
def crowded_plans(draw: st.DrawFn) -> tuple[list[Path], dict[int, Path]]:
    """A plan of robots on 12 cells (so paths cross often) and new paths for some of them, with the
    robots' own starts and distinct goals (the index parks one robot per goal cell)."""
    n = draw(st.integers(2, 7))
    ends = draw(st.lists(st.integers(0, 11), min_size=n, max_size=n, unique=True))
    middle = st.lists(st.integers(0, 11), max_size=5)
    current = [(e + 12, *draw(middle), e) for e in ends]  # each start its own cell too
    chosen = draw(st.sets(st.integers(0, n - 1), min_size=1))
    written = {r: (current[r][0], *draw(middle), current[r][-1]) for r in sorted(chosen)}
    return current, written


@settings(max_examples=300, deadline=None)
@given(crowded_plans())
def test_dropping_walks_only_the_paths_put_back_after_the_first_pass_and_keeps_the_same(
    plan: tuple[list[Path], dict[int, Path]],
) -> None:
    """After the first pass only the paths just put back are walked (against the kept ones): the result
    equals checking every kept robot on every pass, and what is kept collides with nothing. Seen to fail
    with no pass after the first, and with the new paths walked instead of the ones put back."""
    current, written = plan
    index = OccupancyIndex.build(24, dict(enumerate(current)))
    kept = drop_colliding(index, current, written)
    assert kept == full_recheck(index, current, written)
    merged = dict(enumerate(current)) | kept
    if conflicts_among(24, dict(enumerate(current))) == 0:
        assert conflicts_among(24, merged) == 0


@settings(max_examples=300, deadline=None)
@given(crowded_plans())
def test_a_rebase_read_off_the_scoring_scan_keeps_the_same(plan: tuple[list[Path], dict[int, Path]]) -> None:
    """The first pass read off the scoring's ``scan_change`` (each new path's conflicts outside, and which
    new paths collide among themselves: ``conflicting_robots``) keeps what walking every path keeps. Seen to
    fail with the parked-goal or the swap pairs left out of ``conflicting_robots``."""
    current, written = plan
    changed = {r: p for r, p in written.items() if p != current[r]}
    index = OccupancyIndex.build(24, dict(enumerate(current)))
    scan = scan_change(index, {r: current[r] for r in changed}, changed)
    among = OccupancyIndex.build(24, changed)
    assert among.conflicting_robots() == {r for r, p in changed.items() if among.cross_conflicts({r: p}, {r})}
    assert keep_what_fits(index, current, changed, scan) == keep_what_fits(index, current, changed)


@pytest.mark.parametrize("repair_seconds", [5.0, 0.0])
def test_a_stale_answer_keeps_its_gain_without_the_robot_that_now_collides(repair_seconds: float) -> None:
    """End to end on an instance: the plan moved on (robot a now waits two steps at its start); a stale
    answer gives a its old path back (2 less) and b a shortest path that crosses another robot. The
    rebase answers a's path alone: b keeps its current path (null), and the plan improves by 2. No repair
    is needed for that, so a coordinator given no time for one (``rebase_repair`` 0) does the same."""
    from tasks.registry import create_task

    params = {
        "map": "random-32-32-10",
        "robots": 40,
        "blocks": 2,
        "exact_limit": 0,
        "rebase_repair": repair_seconds,
    }
    task = create_task("routing", params)
    start = task.initial_state()
    assert start.conflicts == 0
    mine, grid, inst = start.blocks[0], task.grid, task.inst

    def shortest(r: int) -> Path:
        return tuple(grid.shortest_path(inst.starts[r], inst.goals[r]))

    waits = {r: (start.paths[r][0],) * 2 + start.paths[r] for r in mine}
    a = next(r for r in mine if not start.index.cross_conflicts({r: waits[r]}, {r}))
    b = next(r for r in mine if r != a and start.index.cross_conflicts({r: shortest(r)}, {r}))
    head = task.apply(start, {0: tuple(waits[a] if r == a else None for r in mine)})
    value = tuple(start.paths[a] if r == a else shortest(b) if r == b else None for r in mine)
    assert task.evaluate_change(head, {0: value}) > task.objective(head)  # as it came: b collides

    rebased = task.rebase(head, 0, value)
    assert rebased is not None
    assert {r: p for r, p in zip(mine, rebased, strict=True) if p is not None} == {a: start.paths[a]}
    assert task.evaluate_change(head, {0: rebased}) == task.objective(head) - 2
