"""The team's tabu list (tasks/routing/searched.py): a lease that found nothing sets its seeds aside, and
later leases start from other delayed robots until none is left."""

from __future__ import annotations

import random

from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.lease import lease_members
from tasks.routing.searched import SearchedSeeds


def test_a_lease_that_merged_nothing_sets_its_seeds_aside_and_one_that_merged_does_not() -> None:
    searched = SearchedSeeds()
    searched.leased(0)
    searched.seeded(0, [4, 7])
    searched.leased(1)
    searched.seeded(1, [9])
    searched.merged(1)
    searched.leased(0)  # block 0's lease merged nothing: 4 and 7 are set aside
    searched.leased(1)  # block 1's merged: 9 is not
    assert searched.avoid == {4, 7}
    searched.seeded(1, [3])
    searched.merged(1)
    searched.leased(1)
    assert searched.avoid == {4, 7}, "a merge counts for its block's current lease only"


def _task(**params: object) -> RoutingTask:
    task = create_task(
        "routing",
        {"map": "random-32-32-10", "robots": 80, "blocks": 6, "exact_limit": 0, "opening": False, **params},
    )
    assert isinstance(task, RoutingTask)
    return task


def test_no_seed_is_drawn_from_those_set_aside_while_another_robot_is_delayed() -> None:
    task = _task()
    state = task.initial_state()
    delayed = [r for r, d in enumerate(task.delays(state)) if d > 0]
    assert len(delayed) >= 6, "the instance needs delayed robots to draw from"
    aside = set(delayed[: len(delayed) // 2])
    for draw in range(20):
        avoid, seeds = set(aside), list[int]()
        lease_members(task, state, set(range(80)), 16, random.Random(draw), avoid, seeds)
        assert seeds and not set(seeds) & aside
        assert avoid == aside
    every, seeds = set(delayed), list[int]()  # none left outside the list: it starts over
    lease_members(task, state, set(range(80)), 16, random.Random(0), every, seeds)
    assert every == set() and seeds


def test_a_blocks_next_lease_starts_elsewhere_when_its_last_found_nothing() -> None:
    """Through the task's lease formation: two leases of block 0 with no merge between start from different
    delayed robots; the list holds the first lease's seeds."""
    task = _task()
    state = task.initial_state()
    formed = task.form_lease(state, 0, frozenset(), 1) or state
    first = list(task._searched._seeds[0])
    assert first
    task.form_lease(formed, 0, frozenset(), 2)
    second = task._searched._seeds[0]
    assert set(first) <= task._searched.avoid
    assert not set(first) & set(second)
