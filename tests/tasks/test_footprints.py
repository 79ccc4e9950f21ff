"""Footprints are sound for every kind, on real instances (docs/architecture.md §3): two valid proposals with
disjoint footprints have zero measured interaction c_pq = Δ_p + Δ_q − Δ_pq. An unsound footprint lets the
``independent`` policy merge interfering proposals (and trips the engine's accounting check)."""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks import capabilities
from tasks.quadratic import QuadraticParams, QuadraticTask
from tasks.routing import RoutingTask
from tasks.routing.instance import RoutingParams
from tests.tasks.routing.test_routing_properties import random_value

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def measured(task: Any, state: Any, p: tuple[int, Any], q: tuple[int, Any]) -> float:
    """c_pq from three evaluations of the full objective (not the kind's own ``interaction``)."""
    f0 = task.objective(state)

    def gain(changes: dict[int, Any]) -> float:
        return f0 - task.objective(task.apply(state, changes))

    return gain({p[0]: p[1]}) + gain({q[0]: q[1]}) - gain({p[0]: p[1], q[0]: q[1]})


# -- quadratic --------------------------------------------------------------------------------------------------------
@PROPERTY
@given(seed=st.integers(0, 10**6), coupling=st.sampled_from([0.0, 0.5]))
def test_quadratic_disjoint_footprints_do_not_interact(seed: int, coupling: float) -> None:
    task = QuadraticTask(QuadraticParams(blocks=6, dim=3, coupling=coupling, seed=seed % 50))
    rng = np.random.default_rng(seed)
    state = task.apply(task.initial_state(), {b: rng.standard_normal(3) for b in task.blocks()})
    b1, b2 = rng.choice(task.n_blocks, size=2, replace=False)
    p, q = (int(b1), rng.standard_normal(3)), (int(b2), rng.standard_normal(3))
    c = measured(task, state, p, q)
    if not task.footprint(state, *p) & task.footprint(state, *q):
        assert abs(c) <= 1e-9 * task.scale()
    else:
        assert coupling > 0  # at coupling 0 every footprint is its own block


# -- routing on a MovingAI map ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def routing_task() -> RoutingTask:
    return RoutingTask(RoutingParams(map="random-32-32-10", robots=30, blocks=6, exact_limit=0))


@PROPERTY
@given(seed=st.integers(0, 10**6))
def test_routing_disjoint_footprints_do_not_interact(routing_task: RoutingTask, seed: int) -> None:
    task, rng = routing_task, random.Random(seed)
    state = task.apply(task.initial_state(), {b: random_value(task, b, rng) for b in task.blocks()})
    b1, b2 = rng.sample(task.blocks(), 2)
    p, q = (b1, random_value(task, b1, rng)), (b2, random_value(task, b2, rng))
    c = measured(task, state, p, q)
    assert c == capabilities.interaction(task, state, p, q)
    if not task.footprint(state, *p) & task.footprint(state, *q):
        assert c == 0


# -- sqlplan on TPC-H SF 0.01 ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sql_task() -> Any:
    from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask

    return SqlPlanTask(SqlPlanParams(blocks=4, scale=0.01, baselines=False))


INDEXES = [
    ("lineitem", ["l_shipdate"]),
    ("lineitem", ["l_partkey"]),
    ("orders", ["o_orderdate"]),
    ("orders", ["o_custkey"]),
    ("part", ["p_size"]),
    ("customer", ["c_mktsegment"]),
    ("supplier", ["s_nationkey"]),
    ("partsupp", ["ps_suppkey"]),
    ("part", ["p_type"]),
]


def random_order(scope: Any, rng: random.Random) -> list[str]:
    """A join order that follows the scope's join graph (a random connected walk), so no cross product."""
    adj: dict[str, set[str]] = {r: set() for r in scope.refs}
    for a, b in scope.joins:
        adj[a].add(b)
        adj[b].add(a)
    order = [rng.choice(scope.refs)]
    while len(order) < len(scope.refs):
        nxt = sorted({n for r in order for n in adj[r]} - set(order)) or sorted(set(scope.refs) - set(order))
        order.append(rng.choice(nxt))
    return order


def random_proposal(task: Any, rng: random.Random) -> tuple[int, Any] | None:
    """A valid block change: an index added (any block may), or a new join order for one of its queries."""
    if rng.random() < 0.5:
        table, cols = rng.choice(INDEXES)
        block = rng.randrange(task.n_blocks)
        return block, task.validate(block, {"add": [{"table": table, "columns": cols}]})
    q = rng.choice(task.qids)
    scopes = [s for s in task.ev.models[q].scopes if s.reorderable and 2 <= len(s.refs) <= 4]
    if not scopes:
        return None
    scope = rng.choice(scopes)
    block = task.block_of[q]
    return block, task.validate(block, {"plans": {q: {"orders": {str(scope.id): random_order(scope, rng)}}}})


def scores(task: Any, state: Any, p: tuple[int, Any]) -> bool:
    """Valid all the way: the plan runs within the step cap and returns the original rows."""
    from tasks.base import InvalidProposal

    try:
        task.evaluate_change(state, {p[0]: p[1]})
    except InvalidProposal:
        return False
    return True


@pytest.mark.slow
def test_sqlplan_disjoint_footprints_do_not_interact(sql_task: Any) -> None:
    """Random pairs of valid proposals on different blocks; every disjoint pair is measured."""
    task, rng = sql_task, random.Random(20261130)
    state = task.initial_state()
    pool = [
        p for p in (random_proposal(task, rng) for _ in range(14)) if p is not None and scores(task, state, p)
    ]
    pairs = [(p, q) for p, q in itertools.combinations(pool, 2) if p[0] != q[0]]
    rng.shuffle(pairs)
    disjoint = [(p, q) for p, q in pairs if not task.footprint(state, *p) & task.footprint(state, *q)][:8]
    assert len(disjoint) >= 4, "the pool should give disjoint pairs to test"
    for p, q in disjoint:
        assert capabilities.interaction(task, state, p, q) == 0.0, (p, q)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "second", "interaction"),
    [
        (("orders", "o_orderdate"), ("lineitem", "l_shipdate"), -285.0),
        (("lineitem", "l_partkey"), ("part", "p_size"), -1346.0),
    ],
)
def test_sqlplan_indexes_on_different_tables_that_meet_in_a_query_interfere(
    sql_task: Any, first: tuple[str, str], second: tuple[str, str], interaction: float
) -> None:
    """The pairs measured in issue 10: tables differ, queries that read both do not; the footprints now meet."""
    task, state = sql_task, sql_task.initial_state()
    p = (0, task.validate(0, {"add": [{"table": first[0], "columns": [first[1]]}]}))
    q = (1, task.validate(1, {"add": [{"table": second[0], "columns": [second[1]]}]}))
    assert task.footprint(state, *p) & task.footprint(state, *q)
    assert capabilities.interaction(task, state, p, q) == interaction
