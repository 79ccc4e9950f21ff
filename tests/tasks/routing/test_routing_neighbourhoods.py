"""Routing's neighbourhood generators (tasks/routing/neighbourhoods.py) and the Task default."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks import capabilities
from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.lns import RoutingProposer
from tasks.routing.neighbourhoods import NAMES, rebuild


@pytest.fixture(scope="module")
def routing() -> RoutingTask:
    task = create_task("routing", {"map": "random-32-32-10", "robots": 40, "blocks": 4, "exact_limit": 0})
    assert isinstance(task, RoutingTask)
    return task


def test_every_generator_keeps_sizes_robots_and_objective(routing: RoutingTask) -> None:
    state = routing.initial_state()
    assert routing.neighbourhoods()[0] == "partition"
    assert routing.form_blocks(state, "partition", 0.5, 1) is None
    changed = 0
    for name in NAMES[1:]:
        for attempt in range(3):
            new = routing.form_blocks(state, name, 0.5, attempt)
            if new is None:
                continue
            changed += 1
            assert [len(b) for b in new.blocks] == [len(b) for b in state.blocks]
            assert sorted(r for b in new.blocks for r in b) == list(range(40))
            assert routing.objective(new) == routing.objective(state)
            routing.load_state(routing.dump_state(new))  # a stored head round-trips
    assert changed > 0


@settings(max_examples=20, deadline=None)
@given(
    name=st.sampled_from(NAMES[1:]),
    keep=st.sets(st.integers(0, 3), max_size=2),
    attempt=st.integers(0, 5),
)
def test_kept_blocks_stay_and_the_others_trade_robots_among_themselves(
    routing: RoutingTask, name: str, keep: set[int], attempt: int
) -> None:
    state = routing.initial_state()
    new = routing.form_blocks(state, name, 0.5, attempt, keep=frozenset(keep))
    if new is None:
        return
    for b, (old, now) in enumerate(zip(state.blocks, new.blocks, strict=True)):
        assert len(now) == len(old)
        if b in keep:
            assert now == old
    free = [b for b in range(4) if b not in keep]
    assert sorted(r for b in free for r in new.blocks[b]) == sorted(r for b in free for r in state.blocks[b])
    assert routing.objective(new) == routing.objective(state)


def test_one_block_left_to_form_is_left_alone(routing: RoutingTask) -> None:
    """The failing input of the rule above: with a single block not kept there is nothing to trade."""
    state = routing.initial_state()
    for name in NAMES[1:]:
        assert routing.form_blocks(state, name, 1.0, 0, keep=frozenset({0, 1, 2})) is None
        two_left = routing.form_blocks(state, name, 1.0, 0, keep=frozenset({0, 1}))
        assert two_left is not None or name == "interaction"  # (no weights between them, maybe)


def test_random_generator_moves_more_robots_at_a_larger_size(routing: RoutingTask) -> None:
    state = routing.initial_state()

    def moved(size: float) -> int:
        new = routing.form_blocks(state, "random", size, 3)
        assert new is not None
        return sum(len(set(a) - set(b)) for a, b in zip(state.blocks, new.blocks, strict=True))

    assert moved(0.1) < moved(1.0)


def test_unknown_generator_is_refused(routing: RoutingTask) -> None:
    with pytest.raises(ValueError, match="no neighbourhood generator 'nope'"):
        routing.form_blocks(routing.initial_state(), "nope", 0.5, 0)


def test_default_task_offers_the_partition_only() -> None:
    quad = create_task("quadratic", {"blocks": 4, "dim": 2})
    assert capabilities.neighbourhoods(quad) == ("partition",)
    assert capabilities.form_blocks(quad, quad.initial_state(), "partition", 0.5, 0) is None
    assert (
        capabilities.form_blocks(quad, quad.initial_state(), "regroup", 0.5, 0, keep=frozenset({1})) is None
    )
    with pytest.raises(ValueError):
        capabilities.form_blocks(quad, quad.initial_state(), "random", 0.5, 0)


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_rebuild_is_a_partition_with_the_same_sizes(data: st.DataObject) -> None:
    sizes = data.draw(st.lists(st.integers(1, 6), min_size=2, max_size=5))
    robots = list(range(sum(sizes)))
    perm = data.draw(st.permutations(robots))
    blocks, i = [], 0
    for s in sizes:
        blocks.append(tuple(perm[i : i + s]))
        i += s
    pool = list(data.draw(st.permutations(robots)))
    cores = []
    for s in sizes:
        k = data.draw(st.integers(0, s))
        cores.append(pool[:k])
        pool = pool[k:]
    new = rebuild(tuple(blocks), cores)
    assert [len(b) for b in new] == sizes
    assert sorted(r for b in new for r in b) == robots
    for core, b in zip(cores, new, strict=True):
        assert set(core) <= set(b)


def test_a_kind_that_regroups_offers_its_regrouping_by_default() -> None:
    from tasks.quadratic import QuadraticTask

    class Regrouping(QuadraticTask):
        def regroup(self, state: Any, attempt: int, keep: frozenset[int] = frozenset()) -> Any:
            return ("regrouped", attempt)

    quad = create_task("quadratic", {"blocks": 4, "dim": 2})
    kind = Regrouping(quad.params)
    assert capabilities.neighbourhoods(kind) == ("partition", "regroup")
    assert capabilities.form_blocks(kind, kind.initial_state(), "regroup", 0.5, 3) == ("regrouped", 3)


def test_a_block_formed_anew_gets_the_base_budget_again(routing: RoutingTask) -> None:
    """Misses lengthen the search on the same robots (up to 4x); other robots under the same block id are a
    new search space. The failing input is the unchanged block: its budget stays long."""
    proposer = routing.make_proposer(routing.ProposerParams(time_budget=0.5), seed=1)
    assert isinstance(proposer, RoutingProposer)

    def contract(robots: list[int]) -> dict[str, Any]:
        return {"block": 0, "data": {"robots": [{"id": r} for r in robots]}}

    assert proposer._budget(contract([1, 2, 3]), 0) == 0.5
    proposer._misses[0] = 2
    assert proposer._budget(contract([1, 2, 3]), 0) == 2.0  # same robots: the misses count
    assert proposer._budget(contract([1, 2, 4]), 0) == 0.5  # formed anew: from the base budget
