"""Screened rounds: the engine selects from a task's cheap predictions and runs exactly only what it merges.

The toy kind's screen disagrees with its exact objective on purpose (a per-block bias, and proposals whose
exact check refuses them while the screen sees nothing wrong), so every invariant here is one a screen
cannot buy: never commit a worsening change, commit the exact objective, spend at most the bounded number
of exact evaluations, and fall back best-first when the screen's pick fails.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from coordinator.engine.convergence import AccountingError, MergedScore, check_accounting
from coordinator.engine.records import Proposal
from coordinator.engine.rounds import EngineSettings, RoundEngine
from tasks.base import InvalidProposal, Reference, Task

BAD = 1000.0
"""A block value the exact check refuses (as a plan that runs past its cap): the screen cannot tell."""


class ToyParams(BaseModel):
    blocks: int = 4


class ScreenedToy(Task[tuple[float, ...], ToyParams]):
    """F = sum over blocks of (x_b - target_b)^2 (+ ``coupling``·x_0·x_1); the screen adds ``bias[b]`` per
    changed block and never sees ``BAD``; exact evaluations are logged."""

    kind = "screened_toy"
    Params = ToyParams

    def __init__(self, n: int, bias: list[float], coupling: float = 0.0, screens: bool = True) -> None:
        super().__init__(ToyParams(blocks=n))
        self.n, self.bias, self.coupling, self.screens = n, bias, coupling, screens
        self.targets = tuple(float(b + 1) for b in range(n))
        self.exact_calls: list[frozenset[int]] = []

    @property
    def n_blocks(self) -> int:
        return self.n

    def initial_state(self) -> tuple[float, ...]:
        return tuple(0.0 for _ in range(self.n))

    def objective(self, state: tuple[float, ...]) -> float:
        f = sum((x - t) ** 2 for x, t in zip(state, self.targets, strict=True))
        f += sum(1e6 for x in state if x == BAD)
        return f + (self.coupling * state[0] * state[1] if self.coupling else 0.0)

    def apply(self, state: tuple[float, ...], changes: Mapping[int, Any]) -> tuple[float, ...]:
        return tuple(float(changes.get(b, x)) for b, x in enumerate(state))

    def evaluate_change(self, state: tuple[float, ...], changes: Mapping[int, Any]) -> float:
        self.exact_calls.append(frozenset(changes))
        if len(changes) == 1 and BAD in changes.values():
            raise InvalidProposal("runs past its cap", "plan_failed")
        return self.objective(self.apply(state, changes))

    def screen_change(self, state: tuple[float, ...], changes: Mapping[int, Any]) -> float | None:
        if not self.screens:
            return None
        clean = {b: (self.targets[b] if v == BAD else v) for b, v in changes.items()}
        return self.objective(self.apply(state, clean)) + sum(self.bias[b] for b in changes)

    def footprint(self, state: tuple[float, ...], block: int, value: Any) -> frozenset[Hashable]:
        return frozenset({block} | ({0, 1} if self.coupling and block in (0, 1) else set()))

    def block_value(self, state: tuple[float, ...], block: int) -> Any:
        return state[block]

    def contract(self, state: tuple[float, ...], block: int) -> dict[str, Any]:
        return {"x": state[block]}

    def validate(self, block: int, value: Any) -> float:
        return float(value)

    def reference(self) -> Reference:
        return Reference(0.0, "lower_bound")

    def scale(self) -> float:
        return 100.0

    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> Any:
        raise NotImplementedError


def props(values: list[tuple[int, float]]) -> list[Proposal]:
    return [
        Proposal(id=f"p{k}", agent="a", block=b, value=v, base_version=0, predicted_improvement=1.0)
        for k, (b, v) in enumerate(values)
    ]


def engine(task: ScreenedToy, checks: int = 3) -> RoundEngine:
    return RoundEngine(task, EngineSettings(strict_accounting=True, screen_exact_checks=checks))


def test_the_screens_best_pick_fails_exactly_and_the_fallback_merges_the_next_best() -> None:
    # F0 = 1 + 4 + 9 + 16 = 30. Screened gains: block 0's value 31 (refused by the exact check), block 1's
    # 15 (exactly it worsens F by 5), block 2's 9 (exact 9 too), block 3's 0 (no move).
    task = ScreenedToy(4, bias=[-30.0, -20.0, 0.0, 0.0])
    eng = engine(task, checks=4)
    snap = eng.initial_snapshot()
    arrivals = props([(3, 0.0), (2, 3.0), (1, 5.0), (0, BAD)])  # p0..p3: best-first is p3, p2, p1
    out = eng.run_round(snap, arrivals, 0)
    codes = {v.proposal_id: v.code for v in out.verdicts}
    assert codes == {
        "p3": "plan_failed",  # the union failed; alone, the exact check refused it
        "p2": "not_improving",  # alone, exactly worse
        "p1": "merged",
        "p0": "screen_not_improving",
    }
    assert task.exact_calls == [frozenset({0, 1, 2}), frozenset({0}), frozenset({1}), frozenset({2})]
    deltas = {v.proposal_id: v.delta for v in out.verdicts}
    assert deltas == {"p3": None, "p2": -5.0, "p1": 9.0, "p0": None}
    assert out.committed and out.snapshot.objective == task.objective(out.snapshot.state)
    assert out.snapshot.objective < snap.objective
    assert out.snapshot.state[0] == 0.0  # the refused value never lands
    rec = out.record
    assert rec.screen is not None and rec.checks == len(rec.screen) <= 4
    assert len(task.exact_calls) == rec.checks
    merged = [c for c in rec.screen if c.merged]
    assert len(merged) == 1 and merged[0].exact == pytest.approx(snap.objective - out.snapshot.objective)
    assert rec.screen[0].exact is not None and rec.screen[0].exact < 0  # the first pick failed exactly


def test_the_fallback_compares_predictions_with_predictions() -> None:
    # Block 2's move gains 9 exactly but screens at 5 (bias +4); block 1's gains 4 on both; block 0's is
    # refused exactly. After {2} merges (exact 9), adding block 1 screens at 9 > 5: it must be checked
    # (against the exact 9 the screened 9 would look like no gain) and merges, exact 13.
    task = ScreenedToy(3, bias=[-30.0, 0.0, 4.0])
    eng = engine(task, checks=4)
    out = eng.run_round(eng.initial_snapshot(), props([(0, BAD), (1, 2.0), (2, 3.0)]), 0)
    codes = {v.proposal_id: v.code for v in out.verdicts}
    assert codes == {"p0": "plan_failed", "p1": "merged", "p2": "merged"}
    assert task.exact_calls[-1] == frozenset({1, 2})
    assert out.snapshot.objective == 1.0  # only block 0's (1 - 0)^2 is left


def test_a_round_never_scores_every_proposal_exactly() -> None:
    task = ScreenedToy(8, bias=[0.0] * 8)
    eng = engine(task, checks=2)
    out = eng.run_round(eng.initial_snapshot(), props([(b, b + 1.0) for b in range(8)]), 0)
    assert out.committed and out.record.accepted == 8
    assert len(task.exact_calls) == 1  # the union, once: no standalone exact score at all
    assert all(v.delta is None and v.screened is not None for v in out.verdicts)


def test_kinds_without_a_screen_are_scored_exactly_as_before() -> None:
    task = ScreenedToy(3, bias=[0.0] * 3, screens=False)
    eng = engine(task)
    out = eng.run_round(eng.initial_snapshot(), props([(0, 1.0), (1, 2.0), (2, 0.5)]), 0)
    assert out.record.screen is None and out.record.screened == 0
    assert all(v.screened is None and v.delta is not None for v in out.verdicts)
    assert {frozenset({b}) for b in range(3)} <= set(task.exact_calls)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 5),
    data=st.data(),
    checks=st.integers(1, 4),
    coupling=st.sampled_from([0.0, 3.0, -3.0]),
)
def test_screened_rounds_never_worsen_and_commit_the_exact_objective(
    n: int, data: st.DataObject, checks: int, coupling: float
) -> None:
    bias = data.draw(st.lists(st.floats(-20, 20), min_size=n, max_size=n))
    values = data.draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.sampled_from([BAD, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0])),
            min_size=1,
            max_size=8,
        )
    )
    task = ScreenedToy(n, bias, coupling if n > 1 else 0.0)
    eng = engine(task, checks)
    snap = eng.initial_snapshot()
    out = eng.run_round(snap, props(values), 0)  # strict accounting: a books error raises
    f1 = out.snapshot.objective
    assert f1 <= snap.objective
    assert f1 == task.objective(out.snapshot.state)
    assert BAD not in out.snapshot.state
    assert len(task.exact_calls) <= checks
    rec = out.record
    assert rec.screen is not None and len(rec.screen) == len(task.exact_calls)
    if out.committed:
        (merged,) = [c for c in rec.screen if c.merged]
        assert merged.exact == pytest.approx(snap.objective - f1, abs=1e-9)
        assert merged.proposals == rec.accepted
    else:
        assert not any(c.merged for c in rec.screen) and rec.accepted == 0


def test_screened_books_must_be_the_merged_combinations_exact_gain() -> None:
    ok = check_accounting(10.0, 6.0, 1.0, [MergedScore(5.0, 4.0)], 1e-9, screened=True)
    assert ok == []
    wrong_gain = check_accounting(10.0, 6.0, 4.0 / 3.0, [MergedScore(5.0, 3.0)], 1e-9, screened=True)
    assert wrong_gain and "screened merge" in wrong_gain[0]
    two = check_accounting(
        10.0, 6.0, 1.0, [MergedScore(2.0, 2.0), MergedScore(2.0, 2.0)], 1e-9, screened=True
    )
    assert two and "screened merge" in two[0]


def test_a_commit_that_is_not_the_checked_combination_trips_the_books() -> None:
    class Drifting(ScreenedToy):
        """Its incremental exact evaluation disagrees with the objective of the applied state (a bug)."""

        def evaluate_change(self, state: tuple[float, ...], changes: Mapping[int, Any]) -> float:
            return super().evaluate_change(state, changes) - 0.5

    task = Drifting(2, bias=[0.0, 0.0])
    with pytest.raises(AccountingError, match="screened merge"):
        engine(task).run_round(engine(task).initial_snapshot(), props([(0, 1.0), (1, 2.0)]), 0)
