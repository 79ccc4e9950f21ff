"""The engine's admission refuses a value that writes outside its lease, from the head's block membership."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator import errors
from coordinator.engine.arrival import score_arrival
from coordinator.engine.ownership import check_inside_lease, describe
from coordinator.engine.records import Proposal, Snapshot
from coordinator.engine.rounds import RoundEngine
from tasks import create_task


def jobshop_engine() -> tuple[RoundEngine, Snapshot]:
    engine = RoundEngine(create_task("jobshop", {"instance": "ft06", "blocks": 3, "exact_limit": 0}))
    return engine, engine.initial_snapshot()


def keys_of(engine: RoundEngine, snap: Snapshot, jobs: tuple[int, ...]) -> dict[str, Any]:
    """Job-shop's wire value naming ``jobs``, each key moved a little (a change, not the current value)."""
    keys = snap.state.keys
    return {str(j): [k + 0.5 for k in keys[j]] for j in jobs}


def proposal(block: int, value: Any, base: int) -> Proposal:
    return Proposal(
        id=f"p{block}", agent="a", block=block, value=value, base_version=base, predicted_improvement=1
    )


def test_a_value_naming_another_blocks_jobs_is_refused_before_scoring() -> None:
    engine, snap = jobshop_engine()
    foreign = keys_of(engine, snap, snap.state.groups[1])
    outcome = engine.run_round(snap, [proposal(0, foreign, 0)], round_index=0)
    (verdict,) = outcome.verdicts
    assert (verdict.status, verdict.code, verdict.delta) == ("rejected", "outside_lease", None)
    assert "job 1" in verdict.reason and "outside its lease" in verdict.reason
    assert outcome.snapshot.state.keys == snap.state.keys and outcome.record.accepted == 0
    arrival = score_arrival(engine, snap, proposal(0, foreign, 0), 0)  # async mode: the same admission
    assert arrival.verdict.code == "outside_lease" and not arrival.committed


def test_after_a_regrouping_the_head_says_which_jobs_a_block_holds() -> None:
    """Block 0's old jobs, proposed on the regrouped version, name jobs block 0 no longer holds."""
    engine, snap = jobshop_engine()
    regrouped = engine.task.regroup(snap.state, 1)
    assert regrouped is not None and regrouped.groups[0] != snap.state.groups[0]
    head = Snapshot(1, snap.objective, (1, 1, 1), regrouped)
    old = keys_of(engine, snap, snap.state.groups[0])
    with pytest.raises(errors.ProposalRefused) as refused:
        engine.admit(head, proposal(0, old, 1))
    assert refused.value.context["reason_code"] == "outside_lease"
    mine = keys_of(engine, head, regrouped.groups[0])
    assert engine.admit(head, proposal(0, mine, 1)) is not None
    # a lease whose elements were formed when it was granted passes them: they win over the head's
    check_inside_lease(
        engine.task,
        head.state,
        0,
        engine.task.validate(0, old),
        held=engine.task.block_elements(snap.state, 0),
    )


def test_refusals_name_elements_in_words_and_cut_long_lists() -> None:
    assert describe({("job", 3), ("job", 1)}) == "job 1, job 3"
    assert describe({("q", i) for i in range(10)}).endswith("and 2 more")
