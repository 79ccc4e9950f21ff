"""LNS2-style collision repair: a first collision-free plan where plain prioritized planning fails."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.occupancy import OccupancyIndex, Path, full_conflicts
from tasks.routing.repair import (
    BlockSearch,
    alone,
    collision_graph,
    collision_neighbourhood,
    collision_pairs,
    count_collisions,
    prioritized,
    repair,
    soft_path,
    target_neighbourhood,
)
from tasks.routing.reservations import Reservations
from tasks.routing.validator import validate_plan
from tests.routing_reference import mirror_matches, reference_try_group

# Robot 0 starts on its goal (1, 1); robot 1 must cross (1, 1) to reach (1, 2): planned first and parked,
# robot 0 blocks robot 1's only way, so prioritized planning in index order has no collision-free path.
ROWS = ["@...", "...@", "..@."]
STARTS_XY = [(1, 1), (1, 0)]
GOALS_XY = [(1, 1), (1, 2)]


def _instance() -> tuple[Grid, list[int], list[int]]:
    grid = Grid.from_rows(ROWS)
    return grid, [grid.cell(*xy) for xy in STARTS_XY], [grid.cell(*xy) for xy in GOALS_XY]


def test_plain_prioritized_planning_fails_on_the_blocked_corridor() -> None:
    grid, starts, goals = _instance()
    assert prioritized(grid, starts, goals, 40, soft=False) is None


def test_repair_reaches_zero_collisions_where_prioritized_planning_fails() -> None:
    grid, starts, goals = _instance()
    soft = prioritized(grid, starts, goals, 40, soft=True)
    assert soft is not None
    assert full_conflicts(grid.n_cells, dict(enumerate(soft))) > 0  # soft PP: a plan, with collisions
    fixed = repair(
        grid, starts, goals, soft, Reservations(grid.n_cells), 40, deadline=time.perf_counter() + 10
    )
    assert fixed.collisions == 0
    verdict = validate_plan(grid.rows(), STARTS_XY, GOALS_XY, [[grid.xy(c) for c in p] for p in fixed.paths])
    assert verdict.valid and verdict.conflicts == 0


def test_repair_on_a_dense_generated_grid() -> None:
    """8x8, 20% walls, 22 robots: hard prioritized planning fails, the repair ends collision-free."""
    rng = random.Random(3)
    rows = ["".join("@" if rng.random() < 0.2 else "." for _ in range(8)) for _ in range(8)]
    grid = Grid.from_rows(rows)
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    big = max(_components(grid, free), key=len)
    starts, goals = rng.sample(big, 22), rng.sample(big, 22)
    assert prioritized(grid, starts, goals, 120, soft=False) is None
    soft = prioritized(grid, starts, goals, 120, soft=True)
    assert soft is not None
    fixed = repair(
        grid, starts, goals, soft, Reservations(grid.n_cells), 120, deadline=time.perf_counter() + 20, k=6
    )
    assert fixed.collisions == 0 == full_conflicts(grid.n_cells, dict(enumerate(fixed.paths)))


def _components(grid: Grid, free: list[int]) -> list[list[int]]:
    seen: set[int] = set()
    out = []
    for c in free:
        if c not in seen:
            d = grid.distances(c)
            comp = [x for x in free if d[x] != UNREACHABLE]
            seen.update(comp)
            out.append(comp)
    return out


def _random_block(
    size: int, robots: int, seed: int
) -> tuple[random.Random, Grid, list[int], list[int]] | None:
    """(rng, grid, starts, goals) of ``robots`` on a random size x size grid, all in its largest
    connected part; None when that part is too small."""
    rng = random.Random(seed)
    grid = Grid.from_rows(
        ["".join("@" if rng.random() < 0.15 else "." for _ in range(size)) for _ in range(size)]
    )
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    big = max(_components(grid, free), key=len) if free else []
    if len(big) < robots:
        return None
    return rng, grid, rng.sample(big, robots), rng.sample(big, robots)


def test_soft_path_counts_the_collisions_it_cannot_avoid() -> None:
    grid, starts, goals = _instance()
    table = Reservations(grid.n_cells)
    table.add_path((starts[0],))  # robot 0 parked on (1, 1) for good
    found = soft_path(grid, starts[1], goals[1], table, 40)
    assert found is not None
    path, collisions = found
    assert collisions == table.path_conflicts(path) > 0


def test_collision_neighbourhood_walks_the_collision_graph() -> None:
    # 0-1 collide, 1-2 collide, 3 collides with nobody inside: a walk from 0 reaches 2 only through 1
    graph = {0: {1}, 1: {0, 2}, 2: {1}}
    for seed in range(20):
        group = collision_neighbourhood(graph, [0, 1, 2], 3, random.Random(seed))
        assert sorted(group) == [0, 1, 2]
    assert collision_neighbourhood({}, [], 3, random.Random(0)) == []


def test_collision_pairs_finds_vertex_swap_and_parking() -> None:
    grid = Grid.from_rows(["...."])
    paths = [(0, 1, 2), (2, 1, 0), (3,)]  # 0 and 1 meet at (1, 0) at t=1; 2 is parked apart
    assert collision_pairs(grid, paths) == {0: {1}, 1: {0}}
    swap = [(0, 1), (1, 0)]
    assert collision_pairs(grid, swap) == {0: {1}, 1: {0}}
    parked = [(1,), (0, 1, 2)]  # robot 1 walks through robot 0's parking cell
    assert collision_pairs(grid, parked) == {0: {1}, 1: {0}}


def test_colliders_names_each_kind_of_conflict_and_never_the_robot_itself() -> None:
    grid = Grid.from_rows(["...."])
    index = OccupancyIndex.build(grid.n_cells, {0: (0, 1, 2), 1: (2, 1, 0), 2: (3,), 3: (1, 0)})
    assert index.colliders(0, (0, 1, 2)) == {1, 3}  # 1 meets it at (1, 0) at t=1, 3 swaps with it
    assert index.colliders(2, (3,)) == set()  # parked apart
    assert index.colliders(4, (3, 2)) == {2}  # starts on robot 2's parking cell


@settings(max_examples=60, deadline=None)
@given(robots=st.integers(1, 8), seed=st.integers(0, 10**6))
def test_colliders_agrees_with_the_collision_graph(robots: int, seed: int) -> None:
    """``OccupancyIndex.colliders`` (what ``BlockSearch.follow`` reads) names, for every robot, exactly its
    neighbours in the collision graph of a pass over the whole index: random walks with waits on a small
    grid, so that vertex, swap and parking conflicts all occur (each robot's goal its own, as in MAPF)."""
    rng = random.Random(seed)
    grid = Grid.from_rows(["...", "...", "..."])
    paths: dict[int, Path] = {}
    for r in range(robots):
        walk = [rng.randrange(grid.n_cells)]
        for _ in range(rng.randrange(6)):
            walk.append(rng.choice([walk[-1], *grid.moves(walk[-1])]))
        if all(p[-1] != walk[-1] for p in paths.values()):
            paths[r] = tuple(walk)
    index = OccupancyIndex.build(grid.n_cells, paths)
    graph = collision_graph(index)
    assert {r: index.colliders(r, p) for r, p in paths.items()} == {r: graph.get(r, set()) for r in paths}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(3, 6), robots=st.integers(2, 9), others=st.integers(0, 4), seed=st.integers(0, 10**6))
def test_repair_never_accepts_more_collisions(size: int, robots: int, others: int, seed: int) -> None:
    """Every accepted step has at most the collisions of the one before; the table is left as it was."""
    rng = random.Random(seed)
    grid = Grid.from_rows(
        ["".join("@" if rng.random() < 0.15 else "." for _ in range(size)) for _ in range(size)]
    )
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    if len(free) < robots + others + 1:
        return
    big = max(_components(grid, free), key=len)
    if len(big) < robots + others:
        return
    cells = rng.sample(big, robots + others)
    starts, goals = cells[:robots], rng.sample(big, robots)
    table = Reservations(grid.n_cells)
    for c in cells[robots:]:  # fixed robots passing by (not on our starts), parked where they end
        table.add_run(0, [c, rng.choice(grid.moves(c))], arrives=False)
    before = (dict(table.vert), dict(table.edge), dict(table.park))
    paths = [tuple(grid.shortest_path(s, g)) for s, g in zip(starts, goals, strict=True)]
    fixed = repair(
        grid,
        starts,
        goals,
        paths,
        table,
        4 * grid.n_cells,
        deadline=time.perf_counter() + 5,
        k=3,
        rng=rng,
        max_iterations=12,
    )
    assert all(b <= a for a, b in zip(fixed.accepted, fixed.accepted[1:], strict=False))
    assert fixed.collisions == fixed.accepted[-1] == count_collisions(grid, fixed.paths, table)[0]
    assert (dict(table.vert), dict(table.edge), dict(table.park)) == before


def test_repair_turns_down_steps_that_would_add_collisions() -> None:
    """The acceptance rule is needed: on this dense grid some re-planned neighbourhoods are worse."""
    rng = random.Random(5)
    grid = Grid.from_rows(["......"] * 6)
    free = list(range(grid.n_cells))
    starts, goals = rng.sample(free, 24), rng.sample(free, 24)
    paths = [tuple(grid.shortest_path(s, g)) for s, g in zip(starts, goals, strict=True)]
    fixed = repair(
        grid,
        starts,
        goals,
        paths,
        Reservations(grid.n_cells),
        150,
        deadline=time.perf_counter() + 20,
        k=4,
        rng=random.Random(0),
        max_iterations=60,
    )
    assert fixed.worse > 0
    assert all(b <= a for a, b in zip(fixed.accepted, fixed.accepted[1:], strict=False))


# A corridor with a pocket: robot P (in the pocket) parks on (3, 0), which robot Q crosses to reach (5, 0).
# On shortest paths P arrives first and Q runs into it; Q cannot get past earlier, P can wait in the pocket.
POCKET = ["......", "..@@@@"]


def _pocket() -> tuple[Grid, list[int], list[int], list[tuple[int, ...]]]:
    grid = Grid.from_rows(POCKET)
    starts = [grid.cell(1, 1), grid.cell(0, 0)]  # P, Q
    goals = [grid.cell(3, 0), grid.cell(5, 0)]
    paths = [tuple(grid.shortest_path(s, g)) for s, g in zip(starts, goals, strict=True)]
    return grid, starts, goals, paths


def test_a_parking_collision_is_cleared_only_by_replanning_the_parked_robot() -> None:
    grid, starts, goals, paths = _pocket()
    search = BlockSearch(grid, starts, goals, paths, Reservations(grid.n_cells), 30)
    assert search.collisions > 0
    kept, collisions, _ = search.try_group([1], None)  # Q alone: P still parks on its way
    assert collisions > 0
    graph, colliding = search.colliding()
    assert alone(search.paths, colliding, set()) == [0]  # P: the shortest trip of the two
    assert alone(search.paths, colliding, {0, 1}) == []
    kept, collisions, _ = search.try_group([0], None)
    assert kept and collisions == 0 and search.collisions == 0
    assert len(search.paths[0]) - 1 > grid.distances(goals[0])[starts[0]]  # P waited for Q


def test_target_neighbourhood_holds_the_robots_parked_on_the_way() -> None:
    grid, starts, goals, paths = _pocket()
    assert target_neighbourhood(paths, goals, [1], 8, random.Random(0)) == [1, 0]  # Q, then P parked on it
    assert target_neighbourhood(paths, goals, [0], 8, random.Random(0)) == [
        0,
        1,
    ]  # P, then Q crossing its goal
    assert target_neighbourhood(paths, goals, [1], 1, random.Random(0)) == [1]
    far = [tuple(grid.shortest_path(starts[0], grid.cell(0, 1))), paths[1]]  # P's goal off Q's way
    assert target_neighbourhood(far, [grid.cell(0, 1), goals[1]], [1], 8, random.Random(0)) == [1]


def test_colliding_robots_on_shortest_paths_are_grouped_by_regrouping() -> None:
    """Neither robot of a parking collision is delayed, so only the collision's own weight joins them."""
    from tasks.routing.occupancy import OccupancyIndex
    from tasks.routing.regroup import COLLIDING, holding_up, regroup_by_weight

    grid, starts, goals, paths = _pocket()
    bystander = grid.cell(0, 1)  # a third robot, parked where it starts, colliding with nobody
    starts3, goals3 = (*starts, bystander), (*goals, bystander)
    plan = (*paths, (bystander,))
    weights = holding_up(
        grid, starts3, goals3, plan, OccupancyIndex.build(grid.n_cells, dict(enumerate(plan)))
    )
    assert weights.get((0, 1)) == COLLIDING
    assert regroup_by_weight(((0, 2), (1,)), weights, 0) in {((0, 1), (2,)), ((2,), (0, 1))}
    search = BlockSearch(grid, starts, goals, paths, Reservations(grid.n_cells), 30)
    assert search.try_group([0], None)[0] and search.collisions == 0  # P waits: no collision left
    clean = (*search.paths, (bystander,))
    index = OccupancyIndex.build(grid.n_cells, dict(enumerate(clean)))
    assert index.total_conflicts() == 0
    assert holding_up(grid, starts3, goals3, clean, index).get((0, 1), 0.0) < COLLIDING


def test_the_first_plan_is_repaired_whole_before_the_agents_start() -> None:
    """empty-16-16, 100 robots: prioritized planning leaves collisions, the whole-plan repair clears them."""
    from tasks.registry import create_task

    params = {"map": "empty-16-16", "robots": 100, "blocks": 3, "exact_limit": 0}
    raw = create_task("routing", {**params, "initial_repair": 0})
    fixed = create_task("routing", params)
    assert raw.initial_state().conflicts > 0
    assert fixed.initial_state().conflicts == 0


def test_loading_a_task_does_not_plan_its_first_plan() -> None:
    """Every API and engine process builds the task; only the one that creates it plans (and repairs) it."""
    from coordinator.engine.rounds import RoundEngine
    from tasks.routing.instance import RoutingParams
    from tasks.routing.task import RoutingTask

    task = RoutingTask(RoutingParams(robots=20, seed=1))
    RoundEngine(task)
    assert "_initial" not in vars(task)  # the cached first plan was never computed
    task.initial_state()
    assert "_initial" in vars(task)  # (the check can fail: planning fills the cache)


def test_repair_without_a_collision_free_plan_stops_when_patience_runs_out() -> None:
    """Two robots swapping ends of a one-cell-wide corridor can never pass each other: the repair stops
    after ``patience`` steps without fewer collisions instead of holding its whole deadline."""
    grid = Grid.from_rows(["...."])
    starts, goals = [grid.cell(0, 0), grid.cell(3, 0)], [grid.cell(3, 0), grid.cell(0, 0)]
    soft = prioritized(grid, starts, goals, 20, soft=True)
    assert soft is not None
    table = Reservations(grid.n_cells)
    fixed = repair(grid, starts, goals, soft, table, 20, deadline=time.perf_counter() + 20, patience=50)
    assert fixed.collisions > 0 and fixed.iterations == 50


def _sorted(keyed: dict[int, tuple[int, ...]]) -> dict[int, list[int]]:
    return {k: sorted(v) for k, v in keyed.items()}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.integers(3, 7),
    robots=st.integers(2, 10),
    others=st.integers(0, 5),
    clean=st.booleans(),
    k=st.integers(1, 4),
    seed=st.integers(0, 10**6),
)
def test_bounded_steps_keep_the_plans_of_the_unbounded_ones(
    size: int, robots: int, others: int, clean: bool, k: int, seed: int
) -> None:
    """``try_group`` against its version before the bounded searches (tests/routing_reference.py): the
    same steps kept, the same plans, totals and tables after every step, on blocks with and without
    collisions; what a step cut short reports is worse than the plan, as the full step's report was."""
    made = _random_block(size, robots + others, seed)
    if made is None:
        return
    rng, grid, starts, goals = made
    max_len = 4 * grid.n_cells
    order = list(range(robots + others))
    rng.shuffle(order)
    planned = prioritized(grid, starts, goals, max_len, soft=True, order=order)
    assert planned is not None
    if not clean:  # the block's own robots on their shortest paths: collisions to repair
        planned[:robots] = [
            tuple(grid.shortest_path(s, g)) for s, g in zip(starts[:robots], goals[:robots], strict=True)
        ]
    table = Reservations(grid.n_cells)
    for p in planned[robots:]:
        table.add_path(p)
    block = (starts[:robots], goals[:robots], planned[:robots])
    ref, new = (BlockSearch(grid, *block, table.copy(), max_len) for _ in range(2))
    for _ in range(12):
        group = rng.sample(range(robots), min(k, robots))
        before = (ref.collisions, ref.soc)
        want = reference_try_group(ref, group, None)
        got = new.try_group(group, None)
        assert got[0] == want[0]
        if want[0]:
            assert got == want
        else:
            assert (got[1], got[2]) > before and (want[1], want[2]) > before
        assert new.paths == ref.paths and new.ext == ref.ext
        assert (new.inside, new.soc) == (ref.inside, ref.soc)
        assert new.inside == new.index.total_conflicts()
        fresh = OccupancyIndex.build(grid.n_cells, dict(enumerate(new.paths)))  # the index kept in step too
        assert (_sorted(new.index.vert), _sorted(new.index.edge)) == (
            _sorted(fresh.vert),
            _sorted(fresh.edge),
        )
        assert (new.index.visits, new.index.park) == (fresh.visits, fresh.park)
        assert (new.full.vert, new.full.edge, new.full.park) == (ref.full.vert, ref.full.edge, ref.full.park)
        assert mirror_matches(new.full, grid.width)  # the compiled SIPP's view of ``full`` kept in step


def test_a_search_with_an_rng_moves_along_a_plateau_of_equal_costs() -> None:
    """Re-planning the same robot again: with an rng it takes other shortest paths at the same sum of
    costs (how the LNS leaves a plan it cannot improve with fixed paths), without one it keeps its path."""
    grid = Grid.from_rows(["......"] * 6)
    starts, goals = [0, 5], [35, 30]
    first = [tuple(grid.shortest_path(s, g)) for s, g in zip(starts, goals, strict=True)]
    for rng, most in ((random.Random(3), None), (None, 1)):
        search = BlockSearch(grid, starts, goals, first, Reservations(grid.n_cells), 40, rng=rng)
        seen = set()
        for _ in range(12):
            kept, collisions, soc = search.try_group([0], None)
            assert kept and (collisions, soc) == (0, 20) == (search.collisions, search.soc)
            seen.add(search.paths[0])
        assert len(seen) >= 3 if most is None else len(seen) == most


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(4, 7), robots=st.integers(2, 8), others=st.integers(0, 4), seed=st.integers(0, 10**6))
def test_put_back_keeps_the_plan_collision_free_and_its_cost(
    size: int, robots: int, others: int, seed: int
) -> None:
    """After salted steps, ``put_back`` gives robots their old paths of equal cost only where those still
    fit: recounted from scratch (block and table), the plan has no collision, its sum of costs is the
    same, a path put back is the old one, and no path moved that the steps had not moved."""
    made = _random_block(size, robots + others, seed)
    if made is None:
        return
    rng, grid, starts, goals = made
    max_len = 4 * grid.n_cells
    planned = prioritized(grid, starts, goals, max_len, soft=False)
    if planned is None:  # (no collision-free first plan: put_back leaves a block with collisions alone)
        return
    table = Reservations(grid.n_cells)
    for p in planned[robots:]:
        table.add_path(p)
    first = planned[:robots]
    search = BlockSearch(grid, starts[:robots], goals[:robots], first, table.copy(), max_len, rng=rng)
    for _ in range(10):
        search.try_group(rng.sample(range(robots), rng.randint(1, robots)), None)
    moved = {i for i in range(robots) if search.paths[i] != first[i]}
    soc = search.soc
    count = search.put_back(first)
    after = {i for i in range(robots) if search.paths[i] != first[i]}
    assert after <= moved and len(moved) - len(after) <= count
    assert sum(len(p) - 1 for p in search.paths) == soc == search.soc
    assert full_conflicts(grid.n_cells, dict(enumerate(search.paths))) == 0
    assert sum(table.path_conflicts(p) for p in search.paths) == 0
    assert search.index.total_conflicts() == 0 and search.collisions == 0


def test_rebase_repairs_a_block_that_collides_with_the_rest_of_the_plan() -> None:
    """``RoutingTask.rebase`` (the coordinator's repair of a late proposal): the block's robots are
    re-planned against every other block's paths until none of them collides; it declines a block with
    nothing to repair, and, with no time for a repair, a block whose non-colliding robots gain nothing
    (here they are on their shortest paths already, so putting the others back keeps no gain)."""
    from tasks.registry import create_task

    params = {"map": "random-32-32-10", "robots": 40, "blocks": 2, "exact_limit": 0, "initial": "shortest"}
    task = create_task("routing", {**params, "rebase_repair": 5.0})
    state = task.initial_state()  # every robot on its own shortest path: the blocks collide
    mine = state.blocks[0]
    others = Reservations(task.grid.n_cells)
    for r, p in enumerate(state.paths):
        if r not in mine:
            others.add_path(p)
    value = task.block_value(state, 0)
    assert count_collisions(task.grid, value, others)[0] > 0
    fixed = task.rebase(state, 0, value)
    assert fixed is not None and count_collisions(task.grid, fixed, others)[0] == 0
    assert task.validate(0, task.encode_value(fixed)) == fixed
    assert [(p[0], p[-1]) for p in fixed] == [(task.inst.starts[r], task.inst.goals[r]) for r in mine]
    assert task.rebase(state, 0, fixed) is None  # nothing collides: nothing to repair
    no_repair = create_task("routing", {**params, "rebase_repair": 0.0})
    assert no_repair.rebase(no_repair.initial_state(), 0, value) is None


def test_rebase_repairs_only_the_robots_the_proposal_writes() -> None:
    """A null in the proposal keeps that robot's current path: the rebase re-plans the written robots
    around it (and everything else in the plan) and answers null for it again, so an agent's answer never
    moves a robot it left alone. The plan here collides everywhere: only the written robots' collisions
    count, the rest of the plan's are not the proposal's to repair."""
    from tasks.registry import create_task

    params = {"map": "random-32-32-10", "robots": 40, "blocks": 2, "exact_limit": 0, "initial": "shortest"}
    task = create_task("routing", {**params, "rebase_repair": 5.0})
    state = task.initial_state()  # every robot on its own shortest path: many collide
    mine = state.blocks[0]
    index = state.index
    writes = [i for i, r in enumerate(mine) if index.cross_conflicts({r: state.paths[r]}, {r})][:3]
    assert writes, "the shortest-path plan has colliding robots in block 0"
    value = tuple(state.paths[r] if i in writes else None for i, r in enumerate(mine))
    fixed = task.rebase(state, 0, value)
    assert fixed is not None
    assert [i for i, p in enumerate(fixed) if p is not None] == writes  # the nulls stay null
    written = {mine[i]: fixed[i] for i in writes}
    rest = Reservations(task.grid.n_cells)
    for r, p in enumerate(state.paths):
        if r not in written:
            rest.add_path(p)
    assert count_collisions(task.grid, list(written.values()), rest)[0] == 0
    assert full_conflicts(task.grid.n_cells, {**dict(enumerate(state.paths)), **written}) > 0  # not ours


def test_the_plan_table_kept_for_rebase_follows_the_plan_and_is_put_back() -> None:
    """``rebase`` reads the other blocks' paths from a table kept for the last plan and moved path by path
    to the next one: after merges and rebases it must hold exactly what a table built from scratch holds
    (a stale cell in it would repair proposals against robots that are no longer there)."""
    from tasks.registry import create_task

    params = {"map": "random-32-32-10", "robots": 40, "blocks": 2, "exact_limit": 0, "initial": "shortest"}
    task = create_task("routing", {**params, "rebase_repair": 5.0})
    state = task.initial_state()

    def fresh(paths: Sequence[Path]) -> Reservations:
        table = Reservations(task.grid.n_cells)
        for p in paths:
            table.add_path(p)
        return table

    def same(kept: Reservations, paths: Sequence[Path]) -> bool:
        want = fresh(paths)
        arrays, built = kept.arrays(task.grid.width), want.arrays(task.grid.width)
        h = min(arrays.occupied.shape[1], built.occupied.shape[1])
        return (
            {k: v for k, v in kept.vert.items() if v} == {k: v for k, v in want.vert.items() if v}
            and {k: v for k, v in kept.edge.items() if v} == {k: v for k, v in want.edge.items() if v}
            and kept.park == want.park
            and (arrays.occupied[:, :h] == built.occupied[:, :h]).all()
            and not arrays.occupied[:, h:].any()
            and (arrays.parked == built.parked).all()
        )

    fixed = task.rebase(state, 0, task.block_value(state, 0))
    assert fixed is not None
    assert same(task._rebaser.plan_table(state), state.paths)  # put back after the repair
    merged = task.apply(state, {0: fixed})  # the plan moves on: block 0's paths change
    assert task.rebase(merged, 1, task.block_value(merged, 1)) is not None
    assert same(task._rebaser.plan_table(merged), merged.paths)
    assert not same(task._rebaser.plan_table(merged), state.paths)  # (the check can tell two plans apart)
