"""A team's opening (tasks/routing/opening.py): with leases smaller than the plan, whole-plan leases searched
briefly while most leases merge, then leases of ``lease_robots`` for good."""

from __future__ import annotations

import pytest

from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.opening import OPENING_SECONDS, WINDOW, Opening


def drive(opening: Opening, leases: int, merge_every: int) -> None:
    """``leases`` leases over 4 blocks, one in ``merge_every`` answered with a merge (0: none)."""
    for i in range(leases):
        opening.leased(i % 4)
        if merge_every and i % merge_every == 0:
            opening.merged(i % 4)


def test_the_opening_lasts_while_a_fifth_of_the_leases_merge_and_ends_for_good() -> None:
    opening = Opening()
    drive(opening, 3 * WINDOW, merge_every=4)  # a quarter merge
    assert opening.open
    drive(opening, 2 * WINDOW, merge_every=10)  # a tenth merge: the opening ends
    assert not opening.open
    drive(opening, 2 * WINDOW, merge_every=1)  # and does not come back
    assert not opening.open


def test_a_merge_counts_for_the_lease_it_came_from_only() -> None:
    """A merge reported for a block with no lease (or after its lease was booked) pays nothing."""
    opening = Opening()
    opening.merged(3)
    drive(opening, WINDOW + 4, merge_every=0)
    assert not opening.open


def _team_task(**params: object) -> RoutingTask:
    task = create_task(
        "routing", {"map": "empty-16-16", "robots": 30, "blocks": 5, "exact_limit": 0, **params}
    )
    assert isinstance(task, RoutingTask)
    return task


def test_a_team_leases_the_whole_plan_with_a_short_search_then_its_share() -> None:
    """End to end on an instance: opening leases hold all 30 robots and their contracts ask for an answer
    within OPENING_SECONDS; once leases stop merging, a lease holds ``lease_robots`` (6) and no such ask."""
    task = _team_task(lease_robots=6)
    state = task.initial_state()
    formed = task.form_lease(state, 0, frozenset(), 0) or state
    assert len(formed.blocks[0]) == 30
    assert task.contract(formed, 0)["search_seconds"] == OPENING_SECONDS
    for attempt in range(1, WINDOW + 6):  # leases that never merge
        formed = task.form_lease(formed, attempt % 5, frozenset(), attempt) or formed
    formed = task.form_lease(formed, 1, frozenset(), 999) or formed
    assert len(formed.blocks[1]) == 6
    assert "search_seconds" not in task.contract(formed, 1)


def test_the_proposer_answers_within_the_contracts_search_seconds() -> None:
    task = _team_task()
    state = task.initial_state()
    proposer = task.make_proposer(task.ProposerParams(time_budget=0.5), seed=0)
    contract = {"block": 0, "data": task.contract(state, 0)}
    assert proposer._budget(contract, 0) == 0.5
    contract["data"]["search_seconds"] = 0.05
    assert proposer._budget(contract, 0) == 0.05


@pytest.mark.parametrize("params", [{}, {"lease_robots": 30}, {"opening": False}, {"blocks": 1}])
def test_whole_plan_leases_no_opening_or_one_agent_has_no_opening(params: dict[str, object]) -> None:
    """Leases of every robot (the default) have nothing to open with."""
    assert _team_task(**params)._opening is None


def test_leases_smaller_than_the_plan_open_with_it() -> None:
    assert _team_task(lease_robots=29)._opening is not None
