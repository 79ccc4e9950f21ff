"""LNS destroy heuristics: valid neighbourhoods, the most-delayed robot first, and the ALNS wheel's bookkeeping."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.routing.destroy import (
    GENERATORS,
    AdaptiveWeights,
    delays,
    occupants,
    random_walk_from_delayed,
)
from tasks.routing.grid import Grid
from tasks.routing.occupancy import OccupancyIndex, canonical

ROWS = ["........", "..@@....", "........", "....@@..", "........", "........"]


def _plan(seed: int, robots: int) -> tuple[Grid, list[tuple[int, ...]], list[int], list[int]]:
    grid = Grid.from_rows(ROWS)
    rng = random.Random(seed)
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    starts = rng.sample(free, robots)
    goals = rng.sample(free, robots)
    paths = []
    for s, g in zip(starts, goals, strict=True):
        detour = [s] + [s] * rng.randint(0, 4)  # some robots wait: they are delayed
        paths.append(canonical(detour + grid.shortest_path(s, g)[1:]))
    return grid, paths, starts, goals


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    robots=st.integers(2, 12),
    k=st.integers(1, 8),
    name=st.sampled_from(sorted(GENERATORS)),
)
def test_generators_return_distinct_robots_at_most_k(seed: int, robots: int, k: int, name: str) -> None:
    grid, paths, starts, goals = _plan(seed, robots)
    index = OccupancyIndex.build(grid.n_cells, dict(enumerate(paths)))
    group = GENERATORS[name](grid, paths, starts, goals, k, random.Random(seed), set(), index)
    assert len(group) <= k
    assert len(set(group)) == len(group)
    assert all(0 <= i < robots for i in group)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), robots=st.integers(1, 12))
def test_occupants_name_every_robot_in_a_cell_at_a_time(seed: int, robots: int) -> None:
    """Against the definition: robot i is at path[min(t, T_i)] at time t (parked from T_i on)."""
    grid, paths, _starts, _goals = _plan(seed, robots)
    index = OccupancyIndex.build(grid.n_cells, dict(enumerate(paths)))
    horizon = max(len(p) for p in paths) + 3
    for t in range(horizon):
        for c in range(grid.n_cells):
            expected = [i for i, p in enumerate(paths) if p[min(t, len(p) - 1)] == c]
            assert occupants(index, c, t) == expected


def test_random_walk_starts_from_the_most_delayed_robot_and_rotates_through_tabu() -> None:
    grid, paths, starts, goals = _plan(3, 8)
    d = delays(grid, paths, starts, goals)
    worst = max(range(8), key=lambda i: d[i])
    assert d[worst] > 0
    tabu: set[int] = set()
    index = OccupancyIndex.build(grid.n_cells, dict(enumerate(paths)))
    first = random_walk_from_delayed(grid, paths, starts, goals, 4, random.Random(0), tabu, index)
    assert first[0] == worst and worst in tabu
    second = random_walk_from_delayed(grid, paths, starts, goals, 4, random.Random(0), tabu, index)
    assert second and second[0] != worst


def _walk_args(seed: int, robots: int, k: int) -> tuple[Any, ...]:
    grid, paths, starts, goals = _plan(seed, robots)
    index = OccupancyIndex.build(grid.n_cells, dict(enumerate(paths)))
    return grid, paths, starts, goals, k, random.Random(seed), set(), index


def _strangers(seed: int, robots: int, k: int, spares: tuple[int, ...]) -> list[int]:
    """The robots a walk collects that stand nowhere the delayed robot could be to arrive before its current
    arrival T (t + distance to its goal < T at no time t)."""
    args = _walk_args(seed, robots, k)
    grid, paths, goals = args[0], args[1], args[3]
    group = random_walk_from_delayed(*args, spares=spares)
    if not group:
        return []
    pick, arrival = group[0], len(paths[group[0]]) - 1
    dist = grid.distances(goals[pick])
    return [
        j
        for j in group[1:]
        if not any(t + dist[paths[j][min(t, len(paths[j]) - 1)]] < arrival for t in range(1, arrival))
    ]


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), robots=st.integers(2, 12), k=st.integers(2, 8))
def test_first_walks_meet_only_robots_in_the_way_of_an_earlier_arrival(
    seed: int, robots: int, k: int
) -> None:
    assert _strangers(seed, robots, k, spares=(1,)) == []


def test_walks_that_may_arrive_on_time_meet_others_too() -> None:
    """The failing input of the rule above: an on-time walk collects robot 5, which is nowhere in the way."""
    assert _strangers(4, 10, 6, spares=(0,)) == [5]
    assert _strangers(4, 10, 6, spares=(1,)) == []
    assert 5 in random_walk_from_delayed(*_walk_args(4, 10, 6))


def test_wheel_rewards_gain_and_decays_losers() -> None:
    wheel = AdaptiveWeights(["a", "b"], reaction=0.5)
    wheel.reward("a", 4.0)
    wheel.reward("b", 0.0)
    assert wheel.weights == {"a": 2.5, "b": 0.5}
    wheel.reward("b", -3.0)  # a worse neighbourhood counts as no gain, never below the floor
    assert wheel.weights["b"] == 0.25
    for _ in range(50):
        wheel.reward("b", 0.0)
    assert wheel.weights["b"] == wheel.floor
    picks = [wheel.choose(random.Random(i)) for i in range(200)]
    assert picks.count("a") > 150


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), blocked=st.floats(0.0, 0.35))
def test_a_walks_options_are_the_moves_that_keep_the_goal_within_reach(seed: int, blocked: float) -> None:
    """``Grid.walk_tier`` against the rule it stands for: from a cell that can reach the goal, the moves
    (in ``moves`` order) whose distance to the goal is at most ``reach``, for every reach."""
    rng = random.Random(seed)
    rows = ["".join("@" if rng.random() < blocked else "." for _ in range(9)) for _ in range(7)]
    grid = Grid.from_rows(rows)
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    if not free:
        return
    goal = rng.choice(free)
    dist = grid.distances(goal)
    for c in free:
        if dist[c] < 0:
            continue  # a walk never stands where the goal cannot be reached
        closer, level = grid.walk_tier(goal, c)
        assert grid.walk_options(goal)[c] == (closer, level)  # kept
        for reach in range(-2, dist[c] + 3):
            slack = reach - dist[c]
            quick = grid.moves(c) if slack > 0 else level if slack == 0 else closer if slack == -1 else ()
            assert quick == tuple(m for m in grid.moves(c) if dist[m] <= reach), (c, reach)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), robots=st.integers(1, 12), k=st.integers(1, 14))
def test_the_spatial_group_is_the_k_routes_nearest_the_pivot(seed: int, robots: int, k: int) -> None:
    """``RoutingProposer._spatial`` (read off the occupancy index ring by ring) gives what a pass over every
    path gives: the routes nearest the pivot's mean cell, nearest first, ties by robot."""
    from tasks.routing.lns import RoutingProposer
    from tasks.routing.repair import BlockSearch
    from tasks.routing.reservations import Reservations

    grid, paths, starts, goals = _plan(seed, robots)
    search = BlockSearch(grid, starts, goals, paths, Reservations(grid.n_cells), 60)
    proposer = RoutingProposer(grid, time_budget=0.1, neighbourhood=k, max_len=60, seed=seed)
    pivot = paths[random.Random(seed).randrange(len(paths))]  # the draw the proposer's rng makes first
    w = grid.width
    cx, cy = round(sum(c % w for c in pivot) / len(pivot)), round(sum(c // w for c in pivot) / len(pivot))

    def distance(i: int) -> int:
        return min(abs(c % w - cx) + abs(c // w - cy) for c in paths[i])

    nearest = sorted(range(robots), key=lambda i: (distance(i), i))[:k]
    assert proposer._spatial(search, k) == nearest
