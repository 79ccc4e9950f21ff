"""A team's overlapping leases choose their size by what each size merged of late (lease_sizes.py)."""

from __future__ import annotations

import random

import pytest

from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.lease_sizes import LeaseSizes


def run_phase(sizes: LeaseSizes, pays: dict[int, float], leases: int, rng: random.Random) -> list[int]:
    """``leases`` leases, each answered at once with the gain its size pays in this phase."""
    chosen = []
    for i in range(leases):
        block = i % 4
        size = sizes.choose(block, rng)
        chosen.append(size)
        sizes.credit(block, pays[size])
    return chosen


def test_the_size_that_merges_more_is_leased_and_the_choice_follows_the_phase() -> None:
    """Early the whole plan (300) pays, later only the fifth (60) does: most leases follow, within about
    30 leases of the change, and the other size is still tried now and then."""
    sizes, rng = LeaseSizes((300, 60)), random.Random(1)
    early = run_phase(sizes, {300: 20.0, 60: 5.0}, 200, rng)
    late = run_phase(sizes, {300: 0.0, 60: 2.0}, 200, rng)
    assert early[50:].count(300) > 0.8 * 150
    assert late[50:].count(60) > 0.8 * 150
    assert 0 < early[50:].count(60) and 0 < late[50:].count(300)  # still explored


def test_a_lease_pays_what_merged_before_its_block_was_leased_again_and_a_loss_pays_nothing() -> None:
    """Each size is tried twice before it is judged; a commit that made the plan worse credits nothing."""
    sizes, rng = LeaseSizes((300, 60), explore=0.0), random.Random(0)
    chosen = []
    for gain in (-5.0, 0.0, 3.0, 5.0):
        chosen.append(sizes.choose(0, rng))
        sizes.credit(0, gain)
    assert chosen == [300, 300, 60, 60]
    assert sizes.choose(0, rng) == 60
    assert sizes.scores() == {300: 0.0, 60: 4.0}


def test_no_sizes_is_refused() -> None:
    with pytest.raises(ValueError):
        LeaseSizes(())


def _team_task(**params: object) -> RoutingTask:
    task = create_task(
        "routing", {"map": "empty-16-16", "robots": 30, "blocks": 5, "exact_limit": 0, **params}
    )
    assert isinstance(task, RoutingTask)
    return task


def test_a_team_task_leases_the_whole_plan_or_a_share_and_a_merge_pays_the_lease() -> None:
    """End to end on an instance: leases take one of the two sizes, and the answer that merges from a
    block credits the size that block was leased with."""
    task = _team_task()
    state = task.initial_state()
    sizes = task._lease_sizes
    assert sizes is not None
    seen = set()
    for attempt in range(12):
        formed = task.form_lease(state, attempt % 5, frozenset(), attempt)
        seen.add(len((formed or state).blocks[attempt % 5]))
    assert seen == {30, 6}


@pytest.mark.parametrize("params", [{"lease_robots": 10}, {"lease_overlap": False}, {"blocks": 1}])
def test_a_fixed_size_exclusive_leases_or_one_agent_learn_nothing(params: dict[str, object]) -> None:
    assert _team_task(**params)._lease_sizes is None
