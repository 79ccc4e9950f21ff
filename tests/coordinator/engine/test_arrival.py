"""The async path's merge semantics in engine/arrival.py, as pure functions (no service, no store)."""

from __future__ import annotations

import numpy as np
import pytest

from coordinator.engine.arrival import score_arrival, window_record
from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Proposal, Snapshot
from coordinator.engine.rounds import RoundEngine
from coordinator.runtime.counters import counters_of
from coordinator.store.base import WindowState
from tasks.quadratic import QuadraticTask
from tasks.registry import create_task
from tests.coordinator.engine.test_engine import STRONG, exact_proposals, proposal


def test_a_fresh_arrival_merges_and_moves_the_head() -> None:
    task = QuadraticTask(STRONG)
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    (p,) = exact_proposals(task, snap, [0])
    arrival = score_arrival(engine, snap, p, 0)
    assert arrival.verdict.status == "accepted" and arrival.committed
    assert arrival.snapshot.version == snap.version + 1
    assert arrival.snapshot.objective < snap.objective
    assert arrival.accepted == 1 and arrival.merge_kind != "none"


def test_a_stale_arrival_that_still_improves_on_the_head_is_rebased_and_merged() -> None:
    task = QuadraticTask(STRONG)  # strong coupling: every pair of blocks interferes
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    first, late = exact_proposals(task, snap, [0, 1])  # both drafted on version 0
    head = score_arrival(engine, snap, first, 0).snapshot  # block 0 committed at version 1
    arrival = score_arrival(engine, head, late, 1)
    v = arrival.verdict
    assert v.status == "accepted" and v.rebased and not v.repaired
    assert "rebased from version 0" in v.reason
    assert arrival.committed and arrival.snapshot.objective < head.objective
    assert v.delta == pytest.approx(head.objective - arrival.snapshot.objective)  # measured on the head
    assert counters_of([v], None)["rebased"] == 1  # counted (report, /metrics)
    fresh = score_arrival(engine, snap, late, 0).verdict  # on its own base it is no rebase
    assert fresh.status == "accepted" and not fresh.rebased


def _improving_on_base_only(task: QuadraticTask, base: Snapshot, head: Snapshot, block: int) -> list[float]:
    """A value of ``block`` that improves ``base`` but not ``head`` (found by a seeded search)."""
    rng = np.random.default_rng(0)
    old = np.asarray(task.block_value(base.state, block), float)
    for _ in range(1000):
        value = list(old + rng.normal(size=old.shape) * 0.1)
        on_base = base.objective - task.evaluate_change(base.state, {block: value})
        on_head = head.objective - task.evaluate_change(head.state, {block: value})
        if on_base > 0 > on_head:
            return value
    raise AssertionError("no such value")


def test_a_stale_arrival_that_no_longer_improves_on_the_head_is_refused_as_stale() -> None:
    task = QuadraticTask(STRONG)
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    (first,) = exact_proposals(task, snap, [0])
    head = score_arrival(engine, snap, first, 0).snapshot
    late = proposal(5, _improving_on_base_only(task, snap, head, 5), snap.version, pid="late")
    assert score_arrival(engine, snap, late, 0).verdict.status == "accepted"  # on its base it merges
    arrival = score_arrival(engine, head, late, 1)
    assert arrival.verdict.status == "rejected" and arrival.verdict.code == "stale_footprint"
    assert "blocks 0 committed after its base version 0" in arrival.verdict.reason
    assert not arrival.committed and arrival.snapshot is head  # the head does not move
    assert arrival.accepted == 0 and arrival.merge_kind == "none"


def test_an_arrival_whose_own_block_changed_since_its_base_is_refused_as_stale_base() -> None:
    task = QuadraticTask(STRONG)
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    (first,) = exact_proposals(task, snap, [0])
    head = score_arrival(engine, snap, first, 0).snapshot
    again = proposal(0, first.value, snap.version, pid="again")
    arrival = score_arrival(engine, head, again, 1)
    assert arrival.verdict.status == "rejected" and arrival.verdict.code == "stale_base"
    assert not arrival.committed


def test_a_closed_window_balances_its_books_and_a_tampered_one_does_not() -> None:
    task = QuadraticTask(STRONG)
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    (p,) = exact_proposals(task, snap, [0])
    arrival = score_arrival(engine, snap, p, 0)
    assert arrival.verdict.delta is not None
    window = WindowState(
        proposals=1,
        accepted=1,
        start_objective=snap.objective,
        merged=[(p.predicted_improvement, arrival.verdict.delta)],
    )
    ref, tol = engine.reference.value, engine.tolerance
    rec, consts, problems = window_record(
        0, arrival.snapshot.version, snap.objective, arrival.snapshot.objective, ref, tol, window
    )
    assert problems == []
    assert rec.merge_kind == "independent" and rec.proposals == 1 and rec.accepted == 1
    assert consts.gamma == pytest.approx(1.0)
    assert rec.objective == arrival.snapshot.objective and rec.gap == pytest.approx(rec.objective - ref)
    tampered = window.model_copy(update={"merged": [(p.predicted_improvement, 2 * arrival.verdict.delta)]})
    _, _, problems = window_record(
        0, arrival.snapshot.version, snap.objective, arrival.snapshot.objective, ref, tol, tampered
    )
    assert problems  # the measured improvements no longer add up to the head's


def _routing_arrival() -> tuple[RoundEngine, Snapshot, Proposal]:
    """A 60-robot plan with collisions (shortest paths) and block 0's proposal, which resolves its share."""
    params = {"map": "random-32-32-10", "robots": 60, "blocks": 3, "exact_limit": 0, "initial": "shortest"}
    task = create_task("routing", params)
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    proposer = task.make_proposer(task.ProposerParams(time_budget=1.0), seed=1)
    draft = proposer.propose(contract_envelope(task, snap, 0))
    assert draft is not None
    return engine, snap, proposal(0, draft.value, snap.version, draft.predicted_improvement)


def test_an_arrival_with_regroup_after_arrival_regroups_only_the_blocks_nobody_holds() -> None:
    """After a merge on arrival, the blocks not kept are formed anew around the new plan; a kept block (an
    agent holds it, or its answer waits in the queue) keeps its robots and its version."""
    engine, snap, p = _routing_arrival()
    plain = score_arrival(engine, snap, p, 0)
    arrival = score_arrival(engine, snap, p, 0, keep=frozenset({1}))
    assert arrival.verdict.status == "accepted" and arrival.regrouped and not plain.regrouped
    assert arrival.snapshot.objective == plain.snapshot.objective  # a regrouping moves no robot
    assert arrival.snapshot.version == plain.snapshot.version == snap.version + 1
    blocks, merged = arrival.snapshot.state.blocks, plain.snapshot.state.blocks
    assert blocks[1] == merged[1] and arrival.snapshot.block_versions[1] == snap.block_versions[1]
    assert {blocks[0], blocks[2]} != {merged[0], merged[2]}  # the free blocks were formed anew
    assert set(blocks[0]) | set(blocks[2]) == set(merged[0]) | set(merged[2])  # among their own robots
    assert arrival.snapshot.block_versions[0] == arrival.snapshot.block_versions[2] == snap.version + 1
