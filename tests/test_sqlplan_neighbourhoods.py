"""sqlplan's neighbourhood generators: re-formed blocks are partitions of the same sizes, F is unchanged,
and a value may re-plan only the queries its block holds in the state it is scored on."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.base import InvalidProposal
from tasks.sqlplan.neighbourhoods import NAMES, regroup_queries
from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask, SqlState


@pytest.fixture(scope="module")
def task() -> SqlPlanTask:
    return SqlPlanTask(SqlPlanParams(blocks=4, scale=0.01, baselines=False))


@pytest.fixture(scope="module")
def s0(task: SqlPlanTask) -> SqlState:
    return task.initial_state()


def test_the_kind_offers_its_generators(task: SqlPlanTask) -> None:
    assert task.neighbourhoods() == NAMES and NAMES[0] == "partition"
    with pytest.raises(ValueError, match="no neighbourhood generator"):
        task.form_blocks(task.initial_state(), "nowhere", 0.5, 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gen=st.sampled_from(NAMES[1:]), size=st.floats(0.05, 1.0), attempt=st.integers(0, 50))
def test_formed_blocks_partition_the_queries_with_the_same_sizes(
    task: SqlPlanTask, s0: SqlState, gen: str, size: float, attempt: int
) -> None:
    new = task.form_blocks(s0, gen, size, attempt)
    if new is None:
        return
    assert sorted(q for b in new.blocks for q in b) == sorted(task.qids)
    assert [len(b) for b in new.blocks] == [len(b) for b in s0.blocks]
    assert new.blocks != s0.blocks
    assert task.objective(new) == task.objective(s0)
    assert task.load_state(task.dump_state(new)).blocks == new.blocks  # persisted with the state


def test_keep_returns_none(task: SqlPlanTask, s0: SqlState) -> None:
    assert task.form_blocks(s0, "partition", 1.0, 3) is None


def test_blocks_to_keep_keep_them_all(task: SqlPlanTask, s0: SqlState) -> None:
    """Under adaptive selection's ``hold`` the merged blocks must stay: the kind keeps every block then."""
    assert task.form_blocks(s0, "random", 1.0, 1) is not None  # the same call without blocks to keep forms
    assert task.form_blocks(s0, "random", 1.0, 1, keep=frozenset({0})) is None


def test_tables_groups_queries_that_share_tables(task: SqlPlanTask, s0: SqlState) -> None:
    new = task.form_blocks(s0, "tables", 1.0, 0)
    assert new is not None
    seed = max(task.qids, key=lambda q: s0.outcomes[task.qids.index(q)].cost)
    home = next(b for b in new.blocks if seed in b)
    t = task.ev.models[seed].tables
    assert all(task.ev.models[q].tables & t for q in home)


def test_a_value_may_replan_only_its_blocks_queries_in_the_current_state(
    task: SqlPlanTask, s0: SqlState
) -> None:
    new = task.form_blocks(s0, "random", 1.0, 1)
    assert new is not None
    q = "q03"
    old_b = next(b for b, qs in enumerate(s0.blocks) if q in qs)
    new_b = next(b for b, qs in enumerate(new.blocks) if q in qs)
    assert old_b != new_b  # (seeded: q03 moves under this attempt)
    value = task.validate(old_b, {"plans": {q: {"orders": {"0": ["orders", "customer", "lineitem"]}}}})
    assert task.evaluate_change(s0, {old_b: value}) < task.objective(s0)  # its block before re-forming
    with pytest.raises(InvalidProposal) as exc:
        task.evaluate_change(new, {old_b: value})  # and no longer after
    assert exc.value.code == "outside_lease"
    assert task.written_elements(new, old_b, value) - task.block_elements(new, old_b) == {("query", q)}
    moved = task.validate(new_b, {"plans": {q: {"orders": {"0": ["orders", "customer", "lineitem"]}}}})
    assert task.evaluate_change(new, {new_b: moved}) < task.objective(new)


def test_stored_blocks_must_partition_the_queries(task: SqlPlanTask, s0: SqlState) -> None:
    data = task.dump_state(s0)
    data["blocks"][0] = data["blocks"][0][1:]  # a query lost
    with pytest.raises(ValueError, match="partition"):
        task.load_state(data)


def test_rebuild_keeps_sizes_and_places_cores() -> None:
    blocks = (("a", "b"), ("c", "d"), ("e",))
    out = regroup_queries(blocks, [["d", "e"], ["a"], []])
    assert out == (("d", "e"), ("a", "c"), ("b",))
