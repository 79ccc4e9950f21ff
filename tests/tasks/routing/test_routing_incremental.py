"""Contracts and agent-side reservation tables built incrementally agree with building them from scratch."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.contract import region_of
from tasks.routing.lns import table_from_contract
from tasks.routing.occupancy import Path
from tasks.routing.rebase import drop_colliding
from tasks.routing.reservations import Reservations
from tests.routing_reference import mirror_matches
from tests.tasks.routing.test_routing_reservations import _paths  # random walks with distinct goals


def _task(robots: int, blocks: int) -> RoutingTask:
    task = create_task(
        "routing",
        {"map": "empty-16-16", "robots": robots, "blocks": blocks, "exact_limit": 0, "initial": "shortest"},
    )
    assert isinstance(task, RoutingTask)
    return task


def _naive_moves(task: RoutingTask, paths: tuple[Path, ...], block: int) -> list[list[Any]]:
    """The contract's runs by the definition: every (t, cell) of another robot in the region and window,
    or on one of the block's goals at any time."""
    inst, w = task.inst, task.grid.width
    robots = inst.blocks[block]
    x0, y0, x1, y1 = region_of(inst, robots, paths, task.p.margin)
    window = max(len(paths[r]) for r in robots) + 2 * task.p.margin + 8
    goals = {inst.goals[r] for r in robots}
    out: list[list[Any]] = []
    for o, p in enumerate(paths):
        if o in robots:
            continue
        run: list[list[int]] = []
        t0 = 0
        for t, c in enumerate(p):
            if x0 <= c % w <= x1 and y0 <= c // w <= y1 and (t <= window or c in goals):
                if not run:
                    t0 = t
                run.append([c % w, c // w])
            elif run:
                out.append([o, t0, run, 0])
                run = []
        if run:
            out.append([o, t0, run, 1 if t0 + len(run) - 1 == len(p) - 1 else 0])
    return out


def _naive_robots(task: RoutingTask, paths: tuple[Path, ...], block: int) -> list[dict[str, Any]]:
    """The contract's robots by the definition: each with its start, goal and current path as [x, y]."""
    xy = task.grid.xy
    inst = task.inst
    return [
        {
            "id": r,
            "start": list(xy(inst.starts[r])),
            "goal": list(xy(inst.goals[r])),
            "path": [list(xy(c)) for c in paths[r]],
        }
        for r in inst.blocks[block]
    ]


def _random_walk_path(task: RoutingTask, robot: int, rng: random.Random) -> Path:
    """A legal path of ``robot``: a short random detour, then its shortest way to the goal."""
    g = task.grid
    c = task.inst.starts[robot]
    cells = [c]
    for _ in range(rng.randint(0, 6)):
        c = rng.choice(g.moves(c))
        cells.append(c)
    return tuple(cells + g.shortest_path(c, task.inst.goals[robot])[1:])


def _same_table(a: Reservations, b: Reservations) -> bool:
    def visits(t: Reservations) -> dict[int, list[int]]:
        return {c: sorted(v) for c, v in t.visits.items() if v}

    return a.vert == b.vert and a.edge == b.edge and a.park == b.park and visits(a) == visits(b)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), margin=st.integers(0, 3), blocks=st.sampled_from([1, 4]))
def test_incremental_contract_and_table_match_a_fresh_build(seed: int, margin: int, blocks: int) -> None:
    """Blocks of a partition, or one block of every robot (a team's whole-plan lease): each contract's
    robots (kept from the last contract of the same robots), region and runs are the definition's."""
    rng = random.Random(seed)
    task = _task(24, blocks)
    task.p.margin = margin
    state = task.initial_state()
    proposer = task.make_proposer(task.ProposerParams(), seed=0)
    for _ in range(5):
        block = rng.randrange(task.n_blocks)
        rendered = task.contract(state, block)
        data = json.loads(rendered.json)  # what an agent receives: the kind's own text (``RenderedContract``)
        assert data == rendered
        assert data["robots"] == _naive_robots(task, state.paths, block)
        assert data["region"] == list(region_of(task.inst, task.inst.blocks[block], state.paths, margin))
        assert data["reservations"]["moves"] == _naive_moves(task, state.paths, block)
        kept = proposer._table(block, data)  # the agent's table, updated in place from its last contract
        assert _same_table(kept, table_from_contract(task.grid, data))
        assert mirror_matches(kept, task.grid.width)  # the compiled SIPP's view of it, kept in step too
        moved = rng.randrange(task.n_blocks)
        value = tuple(_random_walk_path(task, r, rng) for r in state.blocks[moved])
        state = task.apply(state, {moved: value})


def test_the_table_check_can_fail() -> None:
    """A table that missed one robot's change differs from the fresh one (the comparison is not vacuous)."""
    task = _task(24, 4)
    state = task.initial_state()
    data = task.contract(state, 0)
    stale = table_from_contract(task.grid, data)
    moved = 1
    value = tuple(_random_walk_path(task, r, random.Random(1)) for r in state.blocks[moved])
    value = tuple(p + p[-2:-1] + p[-1:] if len(p) > 1 else p for p in value)  # a wait-and-return at the end
    after = task.apply(state, {moved: value})
    assert not _same_table(stale, table_from_contract(task.grid, task.contract(after, 0)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robots=st.integers(1, 10), seed=st.integers(0, 10**6))
def test_the_occupancy_index_after_removals_is_the_index_of_the_paths_left(robots: int, seed: int) -> None:
    """Paths that wait, revisit cells and collide (several robots in one cell, on one edge), removed in
    any order: the index equals one built from the remaining paths alone (tuple order aside)."""
    from tasks.routing.grid import Grid
    from tasks.routing.occupancy import OccupancyIndex

    rng = random.Random(seed)
    grid = Grid.from_rows(["...."] * 3)
    paths = dict(enumerate(_paths(grid, rng, robots)))
    index = OccupancyIndex.build(grid.n_cells, paths)
    gone = rng.sample(sorted(paths), rng.randint(0, len(paths)))
    for r in gone:
        index.remove(r, paths[r])
    fresh = OccupancyIndex.build(grid.n_cells, {r: p for r, p in paths.items() if r not in gone})

    def norm(d: dict[int, Any]) -> dict[int, Any]:
        return {k: sorted(v) for k, v in d.items()}

    assert norm(index.vert) == norm(fresh.vert) and norm(index.edge) == norm(fresh.edge)
    assert index.visits == fresh.visits
    assert index.park == fresh.park


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6))
def test_applying_a_change_leaves_the_old_plans_index_as_it_was(seed: int) -> None:
    """``apply`` works on a copy of the index: the state it started from still scores its own paths (the
    coordinator keeps old states as the bases of proposals in flight). A copy that shared the per-cell visit
    dicts fails this as soon as a moved robot passes a cell that another robot also visits."""
    from tasks.routing.occupancy import OccupancyIndex

    rng = random.Random(seed)
    task = _task(24, 4)
    state = task.initial_state()
    before = OccupancyIndex.build(task.grid.n_cells, dict(enumerate(state.paths)))
    moved = rng.randrange(task.n_blocks)
    task.apply(state, {moved: tuple(_random_walk_path(task, r, rng) for r in state.blocks[moved])})
    assert (state.index.vert, state.index.edge, state.index.park) == (before.vert, before.edge, before.park)
    assert state.index.visits == before.visits


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), read=st.lists(st.booleans(), min_size=1, max_size=5))
def test_a_commits_index_is_made_only_when_read_and_is_the_index_of_its_paths(
    seed: int, read: list[bool]
) -> None:
    """``apply`` makes no index (a team's commits need none): one is made when read, from the last state's
    if that one was made, else from the paths, and either way it is the index of the state's paths. Seen to
    fail with the changed paths not taken out of the copy, and with the last state's index made to derive
    the next one's."""
    from tasks.routing.occupancy import OccupancyIndex

    rng = random.Random(seed)
    task = _task(24, 4)
    state = task.initial_state()
    unread = []
    for look in read:  # a chain of commits, some of whose indexes are read
        moved = rng.randrange(task.n_blocks)
        walks = tuple(_random_walk_path(task, r, rng) for r in state.blocks[moved])
        state = task.apply(state, {moved: walks})
        assert state.lazy_index._made is None
        if not look:
            unread.append(state)
        else:
            fresh = OccupancyIndex.build(task.grid.n_cells, dict(enumerate(state.paths)))
            index = state.index
            for mine, theirs in ((index.vert, fresh.vert), (index.edge, fresh.edge)):  # (robots in any order)
                assert {k: sorted(v) for k, v in mine.items()} == {k: sorted(v) for k, v in theirs.items()}
            assert (index.park, index.visits) == (fresh.park, fresh.visits)
            assert index.total_conflicts() == state.conflicts
    assert all(s.lazy_index._made is None for s in unread)  # what nobody read was never made


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(2, 30))
def test_a_copied_index_and_its_source_change_independently(seed: int, count: int) -> None:
    """``OccupancyIndex.copy`` shares its inner dicts until one side changes a cell (copy on write): after
    paths move in either index, each must equal an index built from scratch for its own paths, and the
    conflicts it counts must be that plan's."""
    from tasks.routing.grid import Grid
    from tasks.routing.occupancy import OccupancyIndex, full_conflicts

    grid = Grid.from_rows(["." * 8] * 8)
    rng = random.Random(seed)
    paths = dict(enumerate(_paths(grid, rng, count)))
    source = OccupancyIndex.build(grid.n_cells, paths)
    copied = source.copy()
    mine, theirs = dict(paths), dict(paths)
    ids = iter(range(100, 10_000))
    for index, plan in ((copied, mine), (source, theirs), (copied, mine)):
        for robot in rng.sample(sorted(plan), k=max(1, len(plan) // 2)):
            index.remove(robot, plan.pop(robot))
        fresh = [p for p in _paths(grid, rng, count) if p[-1] not in {q[-1] for q in plan.values()}]
        for robot, path in zip(ids, fresh, strict=False):
            index.add(robot, path)
            plan[robot] = path
    for index, plan in ((copied, mine), (source, theirs)):
        built = OccupancyIndex.build(grid.n_cells, plan)
        assert (index.vert, index.edge, index.visits, index.park) == (
            built.vert, built.edge, built.visits, built.park,
        )  # fmt: skip
        assert index.total_conflicts() == full_conflicts(grid.n_cells, plan)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6))
def test_a_scored_value_applied_to_another_plan_is_counted_on_that_plan(seed: int) -> None:
    """``apply`` reuses the conflicts ``evaluate_change`` just counted only for the very state and values
    it counted them on: the same value applied after the plan moved (a stale answer merged as it came) is
    counted afresh, and every total agrees with scoring the paths from scratch."""
    rng = random.Random(seed)
    task = _task(24, 4)
    head = task.initial_state()
    blocks = rng.sample(range(task.n_blocks), 2)
    values = {b: tuple(_random_walk_path(task, r, rng) for r in head.blocks[b]) for b in blocks}
    first, second = ({b: values[b]} for b in blocks)
    scored = task.evaluate_change(head, first)
    moved = task.apply(head, second)  # the plan moves on before the first value is applied
    for state, change in ((head, first), (moved, first), (moved, second)):
        after = task.apply(state, change)
        assert task.objective(after) == task.full_objective(after.paths)
    assert task.objective(task.apply(head, first)) == scored


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), initial=st.sampled_from(["prioritized", "shortest"]))
def test_a_rebased_answer_scores_what_a_count_from_scratch_gives(seed: int, initial: str) -> None:
    """The engine scores a stale answer right after the rebase; on a plan without conflicts that score's
    conflicts are not counted (what the rebase kept fits: none come, and none can go). On plans with
    conflicts (``shortest``) and without, the score is the objective of the plan it makes, from scratch."""
    rng = random.Random(seed)
    params = {"map": "empty-16-16", "robots": 24, "blocks": 2, "exact_limit": 0, "initial": initial}
    task = create_task("routing", params)
    assert isinstance(task, RoutingTask)
    head = task.initial_state()
    mine, paths, grid = head.blocks[0], head.paths, task.grid
    waits = {r: (paths[r][0],) * rng.randint(1, 3) + paths[r] for r in mine if rng.random() < 0.5}
    if initial == "prioritized":  # another answer merged since this one's base (on a plan without conflicts,
        waits = drop_colliding(head.index, paths, waits)  # one that added none)
    moved = task.apply(head, {0: tuple(waits.get(r) for r in mine)})
    assert (moved.conflicts == 0) == (initial == "prioritized")
    shortest = {r: tuple(grid.shortest_path(task.inst.starts[r], task.inst.goals[r])) for r in mine}
    stale = tuple(rng.choice([None, paths[r], shortest[r]]) for r in mine)  # back, or straight, or kept
    fixed = task.rebase(moved, 0, stale)
    if fixed is None:
        return
    scored = task.evaluate_change(moved, {0: fixed})
    assert scored == task.full_objective(task.apply(moved, {0: fixed}).paths)
