"""sqlplan partial indexes: rendered from the workload's own terms; used only where the query implies them."""

from __future__ import annotations

import pytest

from tasks.base import InvalidProposal
from tasks.sqlplan import partial
from tasks.sqlplan.indexes import IndexSpec, parse_index_spec
from tasks.sqlplan.plan import DEFAULT_PLAN
from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask
from tasks.sqlplan.workload import ensure_tpch_db


@pytest.fixture(scope="module")
def task() -> SqlPlanTask:
    ensure_tpch_db(0.01)
    return SqlPlanTask(SqlPlanParams(blocks=4, scale=0.01, baselines=False))


def _q06_index(task: SqlPlanTask) -> IndexSpec:
    terms = partial.constant_terms(task.ev.models["q06"], task.workload.schema)[(0, "lineitem")]
    raw = {"table": "lineitem", "columns": ["l_shipdate", "l_discount", "l_extendedprice"], "where": terms}
    return parse_index_spec(raw, task.workload.schema)


def test_q06_uses_its_partial_index_and_keeps_its_result(task: SqlPlanTask) -> None:
    spec = _q06_index(task)
    idx = frozenset([spec])
    assert "WHERE" in spec.create_sql() and spec.where
    sig = task.ev.signature("q06", DEFAULT_PLAN, idx)
    assert any(spec.name in s for s in sig), sig
    out = task.ev.measure("q06", DEFAULT_PLAN, idx, fresh=True)
    assert out.ok, out.reason
    assert out.cost * 10 < task.ev.default_cost["q06"]
    # smaller than the same index on the whole table
    whole = parse_index_spec(
        {"table": "lineitem", "columns": ["l_shipdate", "l_discount", "l_extendedprice"]},
        task.workload.schema,
    )
    assert task.ev.size(spec) * 10 < task.ev.size(whole)


def test_q14_cannot_use_q06s_partial_index(task: SqlPlanTask) -> None:
    """q14's WHERE does not imply q06's terms: SQLite plans q14 as if the index were not there."""
    spec = _q06_index(task)
    sig = task.ev.signature("q14", DEFAULT_PLAN, frozenset([spec]))
    assert not any(spec.name in s for s in sig), sig
    assert sig == task.ev.signature("q14", DEFAULT_PLAN, frozenset())
    out = task.ev.measure("q14", DEFAULT_PLAN, frozenset([spec]))
    assert out.ok and out.cost == task.ev.default_cost["q14"]


@pytest.mark.parametrize(
    "term",
    [
        "l_quantity < 25",  # not a term of any query
        "1 = 1) OR (1 = 1",  # text that would change the WHERE if it were pasted
        "l_quantity < 24; DROP TABLE lineitem",
        7,
    ],
)
def test_a_term_outside_the_workload_is_refused(task: SqlPlanTask, term: object) -> None:
    raw = {"table": "lineitem", "columns": ["l_quantity"], "where": [term]}
    with pytest.raises(InvalidProposal) as err:
        parse_index_spec(raw, task.workload.schema)
    assert err.value.code == "bad_predicate" or err.value.code == "bad_shape"


def test_a_term_on_another_table_is_refused(task: SqlPlanTask) -> None:
    raw = {"table": "orders", "columns": ["o_orderdate"], "where": ["l_quantity < 24"]}
    with pytest.raises(InvalidProposal):
        parse_index_spec(raw, task.workload.schema)


def test_partial_spec_round_trips_through_an_agents_json(task: SqlPlanTask) -> None:
    spec = _q06_index(task)
    again = parse_index_spec(spec.to_json(), task.workload.schema)
    assert again == spec and again.name == spec.name
    plain = parse_index_spec({"table": "lineitem", "columns": ["l_shipdate"]}, task.workload.schema)
    assert "where" not in plain.to_json() and "WHERE" not in plain.create_sql()


def test_proposer_offers_partial_candidates_for_q06(task: SqlPlanTask) -> None:
    proposer = task.make_proposer(task.ProposerParams(use_expert=False))
    cands = proposer.partial_candidates("q06")
    assert cands and any(c.where for c in cands)
    best = min(task.ev.measure("q06", DEFAULT_PLAN, frozenset([c])).cost for c in cands)
    assert best * 10 < task.ev.default_cost["q06"]


def test_q01_reads_its_expressions_from_an_index_and_keeps_its_result(task: SqlPlanTask) -> None:
    """An index that stores q01's ``l_extendedprice * (1 - l_discount) [* (1 + l_tax)]`` lets SQLite read
    the values instead of recomputing them per row: cheaper than the same columns without them."""
    schema = task.workload.schema
    exprs = partial.table_expressions(task.ev.models["q01"], schema)[(0, "lineitem")][:2]
    cols = [
        "l_returnflag",
        "l_linestatus",
        "l_quantity",
        "l_extendedprice",
        "l_discount",
        "l_tax",
        "l_shipdate",
    ]
    plain = parse_index_spec({"table": "lineitem", "columns": cols}, schema)
    with_exprs = parse_index_spec(
        {"table": "lineitem", "columns": cols[:2] + [{"expr": e} for e in exprs] + cols[2:]}, schema
    )
    assert parse_index_spec(with_exprs.to_json(), schema) == with_exprs
    a = task.ev.measure("q01", DEFAULT_PLAN, frozenset([plain]))
    b = task.ev.measure("q01", DEFAULT_PLAN, frozenset([with_exprs]), fresh=True)
    assert a.ok and b.ok, (a.reason, b.reason)
    assert b.cost < a.cost


@pytest.mark.parametrize("expr", ["l_extendedprice * 2", "abs(l_tax)", "l_quantity); DROP TABLE x; --"])
def test_an_expression_outside_the_workload_is_refused(task: SqlPlanTask, expr: str) -> None:
    raw = {"table": "lineitem", "columns": [{"expr": expr}]}
    with pytest.raises(InvalidProposal) as err:
        parse_index_spec(raw, task.workload.schema)
    assert err.value.code == "bad_predicate"


def test_a_measurement_is_reused_only_when_sqlite_runs_the_same_plan(task: SqlPlanTask) -> None:
    """q14 cannot use q06's partial index: its plan is unchanged, so the earlier run answers (exactly,
    as a fresh run confirms). q06 can: its plan changes, so it is run."""
    spec = _q06_index(task)
    idx = frozenset([spec])
    task.ev.measure("q14", DEFAULT_PLAN, frozenset())
    before = task.ev.reused, task.ev.runs
    reused = task.ev.measure("q14", DEFAULT_PLAN, idx | {_other_lineitem_index(task)})
    assert task.ev.runs == before[1]  # answered without a run (by the pruned key, or the plan's reuse)
    fresh = task.ev.measure("q14", DEFAULT_PLAN, idx | {_other_lineitem_index(task)}, fresh=True)
    assert (reused.cost, reused.ok) == (fresh.cost, fresh.ok)
    runs = task.ev.runs
    q06 = task.ev.measure("q06", DEFAULT_PLAN, idx | {_other_lineitem_index(task)})
    assert task.ev.runs == runs + 1 and q06.cost < task.ev.default_cost["q06"]


def _other_lineitem_index(task: SqlPlanTask) -> IndexSpec:
    return parse_index_spec({"table": "lineitem", "columns": ["l_comment"]}, task.workload.schema)
