"""sqlplan at scale: originals that do not finish (rows from an equivalent plan); the shared file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tasks.sqlplan.evaluate import Evaluator, compare_rows
from tasks.sqlplan.indexes import IndexSpec
from tasks.sqlplan.plan import DEFAULT_PLAN, QueryPlan
from tasks.sqlplan.sandbox import Sandbox
from tasks.sqlplan.workload import QUERIES_DIR, ensure_tpch_db, load_workload


@pytest.fixture(scope="module")
def queries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("queries")
    for q in ("q04", "q17", "q20"):
        shutil.copy(QUERIES_DIR / f"{q}.sql", d / f"{q}.sql")
    return d


@pytest.fixture(scope="module")
def full(queries: Path) -> Evaluator:
    return Evaluator(load_workload(None, str(queries), 0.01), 2_000_000)


@pytest.fixture(scope="module")
def capped(queries: Path, full: Evaluator) -> Evaluator:
    return Evaluator(load_workload(None, str(queries), 0.01), 2_000_000, reference_cap=250)


def test_open_queries_get_the_original_rows_from_an_equivalent_plan(
    full: Evaluator, capped: Evaluator
) -> None:
    # SF 0.01 defaults: q04 96, q17 305, q20 15,421 callbacks; a cap of 250 leaves q17 and q20 open
    assert full.default_cost["q04"] < 250 < min(full.default_cost["q17"], full.default_cost["q20"])
    assert capped.open_default == {"q17", "q20"}
    for q in ("q17", "q20"):
        assert capped.default_cost[q] == 250  # a lower bound, not a cost
        assert "the original SQL with " in capped.reference_source[q]
        assert compare_rows(capped.reference[q], full.reference[q]) == ""
    assert capped.reference["q04"] == full.reference["q04"]
    assert capped.default_cost["q04"] == full.default_cost["q04"]
    # the comparison that vouches for the rows can fail: another query's rows are told apart
    assert compare_rows(capped.reference["q17"], full.reference["q20"]) != ""


def test_the_original_sql_of_an_open_query_counts_at_the_cap_other_plans_must_finish(
    capped: Evaluator,
) -> None:
    useless = IndexSpec("lineitem", ("l_comment",), ("BINARY",))
    out = capped.measure("q17", DEFAULT_PLAN, [useless])
    assert out.ok and out.cost == 250  # stopped at the cap: a verified lower bound, rows by construction
    helps = IndexSpec("lineitem", ("l_partkey",), ("BINARY",))
    fast = capped.measure("q17", DEFAULT_PLAN, [helps])
    assert fast.ok and fast.cost < 250
    scope = next(s for s in capped.models["q17"].scopes if s.reorderable)
    slow = QueryPlan(((scope.id, ("lineitem", "part")),), ())  # lineitem first: a subquery per row
    bad = capped.measure("q17", slow, [])
    assert not bad.ok  # not the original SQL: it must finish within the cap to count


def test_a_sandbox_reads_the_shared_file_until_its_first_index(tmp_path: Path) -> None:
    db = ensure_tpch_db(0.01)
    a, b = Sandbox(db), Sandbox(db)
    try:
        assert a.query("SELECT count(*) FROM nation").rows == [(25,)]
        assert not a.copied and not b.copied
        a.ddl(["CREATE INDEX bo_x ON nation(n_name)"])
        assert a.copied and not b.copied
        assert "bo_x" in a.index_names() and "bo_x" not in b.index_names()
        same = "SELECT n_name FROM nation WHERE n_name > 'M' ORDER BY n_name"
        assert a.query(same).rows == b.query(same).rows
    finally:
        a.close()
        b.close()
    assert not [p for p in db.parent.iterdir() if p.name.startswith(db.name + "-")]  # no journal beside it


def test_the_schema_only_plan_is_the_full_databases_plan(full: Evaluator) -> None:
    from tasks.sqlplan.plan import QueryPlan

    li = [IndexSpec("lineitem", (c,), ("BINARY",)) for c in ("l_partkey", "l_suppkey", "l_shipdate")]
    pa = IndexSpec("part", ("p_brand", "p_container"), ("BINARY", "BINARY"))
    sets = [
        frozenset(),
        frozenset(li[:1]),
        frozenset([*li, pa]),
        frozenset([pa]),
        frozenset(li[1:]),
        frozenset(),
    ]
    checked = 0
    for q in ("q04", "q17", "q20"):
        plans = [DEFAULT_PLAN] + [
            QueryPlan(((s.id, tuple(reversed(s.refs))),), ()) for s in full.models[q].scopes if s.reorderable
        ]
        for idx in sets:  # adding, then dropping: a dropped index must leave the plan too
            for p in plans:
                assert full.fast_signature(q, p, idx) == full.signature(q, p, idx), (q, p, idx)
                checked += 1
    assert checked >= 30
    # and the two can tell plans apart: an index that q17's subquery uses changes its signature
    assert full.fast_signature("q17", DEFAULT_PLAN, li[:1]) != full.fast_signature("q17", DEFAULT_PLAN, ())


def test_unused_indexes_are_not_built_unless_they_steer_the_plan(full: Evaluator) -> None:
    useless = IndexSpec("lineitem", ("l_comment",), ("BINARY",))
    helps = IndexSpec("lineitem", ("l_partkey",), ("BINARY",))
    rel = frozenset([useless, helps])
    assert full._used("q17", DEFAULT_PLAN, rel) == {helps}  # the plan names only l_partkey's index
    pruned = full.measure("q17", DEFAULT_PLAN, rel)
    assert (pruned.cost, pruned.ok) == (full.measure("q17", DEFAULT_PLAN, rel, fresh=True).cost, True)
    assert full.mispruned == 0


def test_an_unused_index_that_steers_the_join_order_is_kept() -> None:
    """On q08 (8 tables) indexes that no step names still change which join order SQLite picks: measuring
    without them would give another plan's cost, so they stay in the key."""
    from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask

    task = SqlPlanTask(SqlPlanParams(blocks=4, scale=0.01, baselines=False))
    ev = task.ev
    rel = frozenset(
        IndexSpec(t, (c,), ("BINARY",))
        for t, c in (("lineitem", "l_partkey"), ("orders", "o_custkey"), ("part", "p_size"))
    )
    steps = ev.fast_signature("q08", DEFAULT_PLAN, rel)
    assert not any(i.name in s for i in rel for s in steps)  # no step names them ...
    assert ev.fast_signature("q08", DEFAULT_PLAN, frozenset()) != steps  # ... yet the plan differs
    assert ev._used("q08", DEFAULT_PLAN, rel) == rel
    assert ev.measure("q08", DEFAULT_PLAN, rel).cost == ev.measure("q08", DEFAULT_PLAN, rel, fresh=True).cost
