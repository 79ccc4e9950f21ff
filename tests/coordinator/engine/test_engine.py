"""The round engine: validation, staleness, both merge policies, and the commit invariant."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Proposal, Snapshot
from coordinator.engine.rounds import EngineSettings, RoundEngine
from coordinator.reports.ledger import RunLedger
from coordinator.runtime.counters import counters_of
from coordinator.runtime.inproc import RunSettings, run_inproc
from tasks.quadratic import QuadraticParams, QuadraticProposer, QuadraticProposerParams, QuadraticTask

STRONG = QuadraticParams(blocks=8, dim=3, coupling=0.6, seed=3)
"""Strong coupling: every pair of blocks interferes, so `independent` merges one block per round."""


class RecordingTask(QuadraticTask):
    """Logs every exact evaluation, so a test can see what the engine checked before merging."""

    def __init__(self, params: QuadraticParams) -> None:
        super().__init__(params)
        self.evaluations: list[tuple[frozenset[int], float]] = []

    def evaluate_change(self, state: Any, changes: Mapping[int, np.ndarray]) -> float:
        value = super().evaluate_change(state, changes)
        self.evaluations.append((frozenset(changes), value))
        return value


def proposal(
    block: int, value: Any, base: int = 0, predicted: float = 1.0, pid: str | None = None
) -> Proposal:
    return Proposal(
        id=pid or f"p{block}-{base}",
        agent="a",
        block=block,
        value=value,
        base_version=base,
        predicted_improvement=predicted,
    )


def exact_proposals(task: QuadraticTask, snap: Any, blocks: list[int]) -> list[Proposal]:
    out = []
    for b in blocks:
        draft = QuadraticProposer().propose(contract_envelope(task, snap, b))
        assert draft is not None
        out.append(proposal(b, draft.value, snap.version, draft.predicted_improvement, pid=f"p{b}"))
    return out


def test_invalid_and_non_improving_proposals_are_rejected_with_reasons() -> None:
    task = QuadraticTask(STRONG)
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    props = [
        proposal(0, [0.0, 0.0], pid="short"),
        proposal(99, [0.0, 0.0, 0.0], pid="nowhere"),
        proposal(1, [0.0, 0.0, 0.0], pid="no-op"),
        proposal(2, [0.0, 0.0, 0.0], base=5, pid="future"),
    ]
    out = engine.run_round(snap, props, 0)
    codes = {v.proposal_id: v.code for v in out.verdicts}
    assert codes == {
        "short": "bad_shape",
        "nowhere": "wrong_block",
        "no-op": "not_improving",
        "future": "future_base",
    }
    assert all(v.reason for v in out.verdicts)
    assert not out.committed and out.snapshot is snap


def test_stale_proposals_are_rejected_and_unchanged_blocks_are_rebased() -> None:
    task = QuadraticTask(STRONG)
    engine = RoundEngine(task, EngineSettings(merge_policy="independent"))
    snap0 = engine.initial_snapshot()
    first = engine.run_round(snap0, exact_proposals(task, snap0, [0]), 0)
    assert first.committed and first.snapshot.version == 1
    # Computed on version 0: block 0 has changed since (stale); block 5 has not (rebased).
    late = exact_proposals(task, snap0, [0, 5])
    out = engine.run_round(first.snapshot, late, 1)
    by_block = {v.block: v for v in out.verdicts}
    assert by_block[0].code == "stale_base"
    assert by_block[5].status == "accepted" and "rebased" in by_block[5].reason


class RepairingTask(QuadraticTask):
    """Repairs a late proposal by the exact minimizer of its block on the head (``Rebasing.rebase``)."""

    def rebase(self, state: Any, block: int, value: Any) -> Any:
        head = Snapshot(0, self.objective(state), (0,) * self.n_blocks, state)
        draft = QuadraticProposer().propose(contract_envelope(self, head, block))
        return None if draft is None else self.validate(block, draft.value)


def test_a_late_proposal_that_no_longer_improves_is_merged_only_as_the_kinds_repair() -> None:
    """A proposal computed before another block merged can lose its gain on the head (the merge moved
    what it counted on). The kind's ``rebase`` may repair it; the repair is scored on the head and merged
    with its measured gain, and the verdict says it was repaired. Without a repair it is rejected."""
    stale_value = None
    for kind, merged in ((QuadraticTask, False), (RepairingTask, True)):
        task = kind(STRONG)
        engine = RoundEngine(task, EngineSettings(merge_policy="independent"))
        snap0 = engine.initial_snapshot()
        head = engine.run_round(snap0, exact_proposals(task, snap0, [0]), 0).snapshot
        # Block 1's current value, sent as computed on version 0: no gain on the head.
        stale_value = task.encode_value(task.block_value(head.state, 1))
        out = engine.run_round(head, [proposal(1, stale_value, base=0)], 1)
        verdict = out.verdicts[0]
        if not merged:
            assert verdict.code == "not_improving" and not out.committed
            continue
        assert verdict.status == "accepted" and "repaired against the head" in verdict.reason
        assert verdict.repaired
        # Counted apart, for /metrics (the service's counters) and the report (the in-process ledger).
        assert counters_of(out.verdicts, out.record)["repaired"] == 1
        ledger = RunLedger(engine.reference, snap0.objective, engine.tolerance)
        ledger.add_round(out.record, [], out.verdicts)
        assert ledger.verdicts["repaired"] == 1
        assert out.committed and verdict.delta == pytest.approx(head.objective - out.snapshot.objective)
        assert verdict.delta is not None and verdict.delta > 0
    # Computed on the head itself, the same value is just not improving: nothing to rebase.
    task = RepairingTask(STRONG)
    engine = RoundEngine(task)
    snap0 = engine.initial_snapshot()
    head = engine.run_round(snap0, exact_proposals(task, snap0, [0]), 0).snapshot
    on_head = engine.run_round(head, [proposal(1, stale_value, base=head.version)], 1)
    assert on_head.verdicts[0].code == "not_improving"


def test_independent_never_merges_interfering_proposals() -> None:
    task = QuadraticTask(STRONG)
    engine = RoundEngine(task, EngineSettings(merge_policy="independent"))
    snap = engine.initial_snapshot()
    for r in range(20):
        props = exact_proposals(task, snap, task.blocks())
        out = engine.run_round(snap, props, r)
        merged = [
            (p.block, task.validate(p.block, p.value))
            for p, v in zip(props, out.verdicts, strict=True)
            if v.status == "accepted"
        ]
        for a, b in itertools.combinations(merged, 2):
            assert abs(task.interaction(snap.state, a, b)) <= engine.tolerance
        assert out.record.merge_kind in ("independent", "none")
        snap = out.snapshot


def test_checked_merges_a_combination_only_after_checking_it() -> None:
    task = RecordingTask(STRONG)
    engine = RoundEngine(task, EngineSettings(merge_policy="checked"))
    snap = engine.initial_snapshot()
    combinations = 0
    for r in range(10):
        props = exact_proposals(task, snap, task.blocks())
        task.evaluations.clear()
        out = engine.run_round(snap, props, r)
        if out.record.merge_kind == "checked_combination":
            combinations += 1
            merged = frozenset(v.block for v in out.verdicts if v.status == "accepted")
            checked = [value for blocks, value in task.evaluations if blocks == merged]
            assert checked, "the merged combination was never evaluated exactly"
            assert min(checked) < snap.objective
        snap = out.snapshot
    assert combinations > 0


def test_checked_needs_fewer_rounds_than_independent_under_strong_coupling() -> None:
    """Instance STRONG (8 blocks of 3, coupling 0.6, seed 3), every block proposing each round."""
    rounds = {}
    for policy in ("checked", "independent"):
        result = run_inproc(
            QuadraticTask(STRONG),
            QuadraticProposerParams(),
            RunSettings(agents=8, max_rounds=1000),
            EngineSettings(merge_policy=policy),
        )
        assert result.status == "optimal"
        rounds[policy] = len(result.ledger.records)
    assert rounds["checked"] < rounds["independent"]


def test_same_block_proposals_are_never_merged_together() -> None:
    task = QuadraticTask(STRONG)
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    (good,) = exact_proposals(task, snap, [4])
    other = proposal(4, list(np.asarray(good.value) * 0.5), predicted=0.1, pid="half")
    out = engine.run_round(snap, [good, other], 0)
    assert [v.status for v in out.verdicts].count("accepted") == 1


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    coupling=st.floats(0.0, 1.0),
    policy=st.sampled_from(["independent", "checked"]),
    scale=st.floats(-2.0, 3.0),
)
def test_a_commit_never_increases_the_objective(
    seed: int, coupling: float, policy: str, scale: float
) -> None:
    """Even with wild proposals (overshooting, random), a round never makes F worse."""
    task = QuadraticTask(QuadraticParams(blocks=5, dim=2, coupling=coupling, seed=seed))
    engine = RoundEngine(task, EngineSettings(merge_policy=policy))  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    snap = engine.initial_snapshot()
    for r in range(4):
        props = exact_proposals(task, snap, task.blocks())
        props += [
            proposal(b, list(rng.standard_normal(2) * abs(scale)), snap.version, 1.0, pid=f"r{b}")
            for b in task.blocks()
        ]
        props = [
            p.model_copy(update={"value": list(np.asarray(p.value) * scale)}) if i % 2 else p
            for i, p in enumerate(props)
        ]
        out = engine.run_round(snap, props, r)
        assert out.snapshot.objective <= snap.objective
        assert out.snapshot.objective == pytest.approx(task.objective(out.snapshot.state))
        assert out.snapshot.version == snap.version + (1 if out.committed else 0)
        snap = out.snapshot
