"""The convergence bound of DESIGN §6, measured on the quadratic where the theory is exact."""

from __future__ import annotations

import math

import pytest

from coordinator.convergence import MergedScore, round_bound, summarize
from coordinator.engine import EngineSettings
from coordinator.inproc import RunResult, RunSettings, run_inproc
from tasks.quadratic import QuadraticParams, QuadraticProposerParams, QuadraticTask

INSTANCE = QuadraticParams(blocks=16, dim=4, coupling=0.3, seed=7)


def run(noise: float = 0.0, staleness: int = 0, agents: int = 16, policy: str = "checked") -> RunResult:
    return run_inproc(
        QuadraticTask(INSTANCE),
        QuadraticProposerParams(noise=noise, staleness=staleness),
        RunSettings(agents=agents, max_rounds=500, seed=1),
        EngineSettings(merge_policy=policy),  # type: ignore[arg-type]
    )


def test_round_bound_is_tight_when_predictions_are_exact() -> None:
    b = round_bound(10.0, 4.0, 0.0, [MergedScore(3.0, 3.0), MergedScore(3.0, 3.0)], tolerance=1e-12)
    assert b is not None
    assert (b.kappa, b.gamma, b.delta) == (0.6, 1.0, 0.0)
    assert b.rhs == pytest.approx(4.0) and b.held


def test_round_bound_detects_an_accounting_violation() -> None:
    # F fell by less than gamma * kappa * g claims: impossible unless the books are wrong.
    b = round_bound(10.0, 9.0, 0.0, [MergedScore(5.0, 1.0)], tolerance=1e-12)
    assert b is not None and b.gamma == 1.0 and b.delta == 4.0
    assert b.held  # 9 <= (1 - 0.5) * 10 + 4 = 9
    bad = round_bound(10.0, 9.5, 0.0, [MergedScore(5.0, 5.0)], tolerance=1e-12)
    assert bad is not None and bad.gamma == pytest.approx(0.1)
    assert bad.held
    assert round_bound(1.0, 1.0, 0.0, [], tolerance=0.0) is None


def test_summary_envelope_and_floor() -> None:
    bounds = [round_bound(g, g / 2, 0.0, [MergedScore(g / 2, g / 2)], 0.0) for g in (8.0, 4.0, 2.0, 1.0)]
    s = summarize([b for b in bounds if b], window=2)
    assert s.rate == pytest.approx(0.5) and s.floor == 0.0
    assert s.envelope == pytest.approx([8.0, 4.0, 2.0, 1.0, 0.5])
    assert (s.envelope_rounds_checked, s.envelope_rounds_held) == (2, 2)


def test_exact_corrections_reach_the_optimum_with_zero_floor() -> None:
    result = run(noise=0.0)
    b = result.ledger.summary()
    final_gap = result.snapshot.objective - result.engine.reference.value
    assert result.status == "converged"
    assert final_gap / abs(result.engine.reference.value) <= 1e-8
    assert b.floor == 0.0 and b.delta_max == 0.0
    assert b.rounds_checked > 3 and b.rounds_held == b.rounds_checked
    assert b.envelope_rounds_checked > 0 and b.envelope_rounds_held == b.envelope_rounds_checked


def test_floor_grows_with_correction_noise() -> None:
    floors = []
    for sigma in (1e-3, 1e-2, 1e-1):
        b = run(noise=sigma).ledger.summary()
        assert b.rounds_held == b.rounds_checked, f"per-round bound violated at sigma={sigma}"
        assert b.floor is not None and math.isfinite(b.floor)
        floors.append(b.floor)
    assert 0 < floors[0] < floors[1] < floors[2]


def test_stale_corrections_are_measured_as_correction_error() -> None:
    """4 agents rotate over 16 blocks, so other blocks move between two leases of one block."""
    result = run(staleness=2, agents=4)
    assert result.status == "converged"
    b = result.ledger.summary()
    assert b.delta_max is not None and b.delta_max > 0
    assert b.rounds_held == b.rounds_checked
