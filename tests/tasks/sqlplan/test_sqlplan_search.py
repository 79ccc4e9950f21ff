"""sqlplan search: INDEXED BY / NOT INDEXED hints found by measurement, covering candidates, CP-SAT knapsack."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.sqlplan import knapsack
from tasks.sqlplan.plan import DEFAULT_PLAN, parse_plan, render
from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask
from tasks.sqlplan.workload import ensure_tpch_db


@pytest.fixture(scope="module")
def task() -> SqlPlanTask:
    ensure_tpch_db(0.01)
    return SqlPlanTask(SqlPlanParams(blocks=4, scale=0.01, baselines=False))


def test_hint_search_finds_not_indexed_for_q02_and_keeps_the_result(task: SqlPlanTask) -> None:
    """On q02 SQLite's own plan probes partsupp's primary key; scanning it (NOT INDEXED) is cheaper."""
    proposer = task.make_proposer(task.ProposerParams())
    before = task.ev.measure("q02", DEFAULT_PLAN, frozenset()).cost
    cost, plan = proposer._improve_hints("q02", DEFAULT_PLAN, frozenset(), time.monotonic() + 60)
    assert cost < before
    assert plan.hints, "the improvement must come from a hint"
    sql = render(task.ev.models["q02"], plan, task.ev.builtin)
    assert "NOT INDEXED" in sql or "INDEXED BY" in sql
    out = task.ev.measure("q02", plan, frozenset(), fresh=True)
    assert out.ok, out.reason  # rows equal to the original query's
    # and the task accepts it as an agent's JSON plan, re-parsed from scratch
    again = parse_plan(plan.to_json(), task.ev.models["q02"], task.workload.schema)
    assert again == plan


def test_hint_search_keeps_no_hint_that_does_not_pay(task: SqlPlanTask) -> None:
    """INDEXED BY an index of no use to q06 makes it dearer: measured, and not kept by the search."""
    model = task.ev.models["q06"]
    spec = {"table": "lineitem", "columns": ["l_comment"]}
    forced = parse_plan(
        {"hints": [{"scope": 0, "table": "lineitem", "index": spec}]}, model, task.workload.schema
    )
    assert "INDEXED BY" in render(model, forced, task.ev.builtin)
    idx = frozenset(forced.hinted_indexes())
    default = task.ev.measure("q06", DEFAULT_PLAN, idx).cost
    assert task.ev.measure("q06", forced, idx).cost > default
    proposer = task.make_proposer(task.ProposerParams())
    cost, plan = proposer._improve_hints("q06", DEFAULT_PLAN, idx, time.monotonic() + 60)
    assert forced.hints[0] not in plan.hints and cost <= default


def test_covering_candidates_put_group_by_columns_first(task: SqlPlanTask) -> None:
    proposer = task.make_proposer(task.ProposerParams(use_expert=False))
    cands = [c.columns for c in proposer.candidates("q01")]
    assert (
        "l_returnflag",
        "l_linestatus",
        "l_shipdate",
        "l_discount",
        "l_extendedprice",
        "l_quantity",
        "l_tax",
    ) in cands


items = st.lists(
    st.tuples(st.integers(0, 50), st.integers(1, 30), st.sampled_from([None, "a", "b"])),
    min_size=0,
    max_size=9,
)


@settings(max_examples=60, deadline=None)
@given(raw=items, capacity=st.integers(0, 80))
def test_knapsack_matches_brute_force(raw: list[tuple[int, int, str | None]], capacity: int) -> None:
    its = [knapsack.Item(i, g, s, grp) for i, (g, s, grp) in enumerate(raw)]
    picked = set(knapsack.choose(its, capacity))
    assert sum(its[i].size for i in picked) <= capacity
    groups = [its[i].group for i in picked if its[i].group is not None]
    assert len(groups) == len(set(groups))
    best = 0
    for r in range(len(its) + 1):
        for combo in itertools.combinations(its, r):
            grp = [c.group for c in combo if c.group is not None]
            if sum(c.size for c in combo) <= capacity and len(grp) == len(set(grp)):
                best = max(best, sum(c.gain for c in combo))
    assert sum(its[i].gain for i in picked) == best


def test_making_room_evicts_the_weakest_per_byte_until_the_new_index_fits(task: SqlPlanTask) -> None:
    """A large winner may serve the queries of several small indexes (at SF 0.1, lineitem(l_partkey)
    answers q17 and q20): the swap evicts as many as it needs, weakest value per byte first."""
    from tasks.sqlplan.indexes import parse_index_spec

    schema = task.workload.schema

    def spec(table: str, *cols: str) -> frozenset:
        return frozenset([parse_index_spec({"table": table, "columns": list(cols)}, schema)])

    big = spec("lineitem", "l_partkey", "l_quantity")
    weak, weaker, strong = (
        spec("orders", "o_custkey"),
        spec("part", "p_size"),
        spec("customer", "c_nationkey"),
    )
    present = weak | weaker | strong
    size = task.ev.size
    budgeted = SqlPlanTask(SqlPlanParams(blocks=4, scale=0.01, baselines=False))
    budgeted.ev = task.ev
    # room for the big one and the strong one only
    budgeted.budget = size(next(iter(big))) + size(next(iter(strong))) + 1
    proposer = budgeted.make_proposer(budgeted.ProposerParams())
    values = {next(iter(weak)): 10.0, next(iter(weaker)): 0.01, next(iter(strong)): 1e9}
    proposer._present_values = lambda state: values  # type: ignore[method-assign]
    state = {"idx": present, "plans": {}, "others": {}}
    room = proposer._make_room(big, state)
    assert big <= room and strong <= room
    assert not (weak | weaker) & room
    assert budgeted.index_bytes(room) <= budgeted.budget
    # one byte short: only the weakest goes
    budgeted.budget = budgeted.index_bytes(present | big) - 1
    assert proposer._make_room(big, state) == (present | big) - weaker
    # with bytes to spare, nothing is evicted
    budgeted.budget += 1
    budgeted.budget = budgeted.index_bytes(present | big)
    assert proposer._make_room(big, state) == present | big
