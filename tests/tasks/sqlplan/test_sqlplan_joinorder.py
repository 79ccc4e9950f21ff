"""sqlplan join orders by DP: equal to brute force under the same model; rendered orders stay equivalent."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.sqlplan import joinorder
from tasks.sqlplan.plan import QueryPlan, render
from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask
from tasks.sqlplan.workload import ensure_tpch_db


@st.composite
def graphs(draw: st.DrawFn) -> joinorder.JoinGraph:
    n = draw(st.integers(2, 6))
    refs = tuple(f"t{i}" for i in range(n))
    rows = {r: float(draw(st.integers(1, 10_000))) for r in refs}
    card = {r: float(draw(st.integers(1, int(rows[r])))) for r in refs}
    pairs = [frozenset(p) for p in itertools.combinations(refs, 2)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))
    sel = {e: draw(st.floats(1e-5, 1.0)) for e in chosen}
    probe = {(a, b): draw(st.booleans()) for e in chosen for a, b in itertools.permutations(sorted(e))}
    return joinorder.JoinGraph(refs, rows, card, sel, probe)


def brute_force(g: joinorder.JoinGraph, head: tuple[str, ...] = ()) -> float:
    rest = [r for r in g.refs if r not in head]
    return min(joinorder.order_cost(g, head + p) for p in itertools.permutations(rest))


@settings(max_examples=200, deadline=None)
@given(graphs(), st.data())
def test_dp_order_is_the_brute_force_optimum(g: joinorder.JoinGraph, data: st.DataObject) -> None:
    cost, order = joinorder.best_order(g)
    assert sorted(order) == sorted(g.refs)
    assert cost == pytest.approx(joinorder.order_cost(g, order), rel=1e-9)
    assert cost == pytest.approx(brute_force(g), rel=1e-9)
    head = (data.draw(st.sampled_from(g.refs)),)
    hcost, horder = joinorder.best_order(g, head)
    assert horder[0] == head[0]
    assert hcost == pytest.approx(brute_force(g, head), rel=1e-9)


def test_a_wrong_cost_is_caught_by_brute_force() -> None:
    """The comparison can fail: the first-written order is not the optimum on a chain with a big head."""
    g = joinorder.JoinGraph(
        ("big", "mid", "small"),
        {"big": 10_000.0, "mid": 100.0, "small": 10.0},
        {"big": 10_000.0, "mid": 100.0, "small": 1.0},
        {frozenset(("big", "mid")): 1e-2, frozenset(("mid", "small")): 1e-2},
        {("mid", "big"): True, ("small", "mid"): True, ("big", "mid"): True, ("mid", "small"): True},
    )
    assert joinorder.order_cost(g, g.refs) > brute_force(g)
    assert joinorder.best_order(g)[1][0] == "small"


@pytest.fixture(scope="module")
def task() -> SqlPlanTask:
    ensure_tpch_db(0.01)
    return SqlPlanTask(SqlPlanParams(blocks=4, scale=0.01, baselines=False))


def test_measured_graph_and_rendered_dp_order_stay_equivalent(task: SqlPlanTask) -> None:
    """q05's six tables: cardinalities are measured on the database; the DP's order is rendered as a
    CROSS JOIN chain, returns the original rows and beats SQLite's own order."""
    proposer = task.make_proposer(task.ProposerParams())
    model = task.ev.models["q05"]
    scope = model.scopes[0]
    sg = proposer._graph("q05", scope)
    assert sg is not None
    assert sg.rows["lineitem"] > sg.rows["orders"] > sg.rows["customer"] > sg.rows["nation"]
    assert sg.card["region"] == 1.0  # r_name = 'ASIA'
    assert len(sg.sel) == 6  # the six join predicates of q05
    orders = proposer._dp_orders("q05", scope, frozenset())
    assert orders
    plan = QueryPlan(((scope.id, orders[0]),), ())
    sql = render(model, plan, task.ev.builtin)
    assert sql.count("CROSS JOIN") == 5
    out = task.ev.measure("q05", plan, frozenset(), fresh=True)
    assert out.ok, out.reason
    assert out.cost < task.ev.default_cost["q05"]


def test_a_rendered_order_that_changes_results_is_caught(task: SqlPlanTask) -> None:
    """The equivalence check can fail: a plan whose SQL returns other rows is not equivalent."""
    model = task.ev.models["q05"]
    rows = task.ev.sandbox.query(
        render(model, QueryPlan(), task.ev.builtin).replace("'ASIA'", "'EUROPE'")
    ).rows
    from tasks.sqlplan.evaluate import compare_rows

    assert compare_rows(rows, task.ev.reference["q05"]) != ""
