"""Convergence claims a run can contradict (docs/architecture.md §5), on the quadratic: theory is exact."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.engine.convergence import AccountingError, MergedScore, check_accounting, round_constants
from coordinator.engine.forecast import consecutive_misses, envelope_summary, forecast, one_step
from coordinator.engine.rounds import EngineSettings, RoundEngine
from coordinator.runtime.inproc import RunResult, RunSettings, run_inproc
from tasks.quadratic import QuadraticParams, QuadraticProposerParams, QuadraticTask

INSTANCE = QuadraticParams(blocks=16, dim=4, coupling=0.3, seed=7)


def run(
    noise: float = 0.0,
    staleness: int = 0,
    agents: int = 16,
    policy: str = "checked",
    params: QuadraticParams = INSTANCE,
    engine: type[RoundEngine] | None = None,
) -> RunResult:
    settings = EngineSettings(merge_policy=policy)  # type: ignore[arg-type]
    if engine is not None:
        import coordinator.runtime.inproc as inproc

        original = inproc.RoundEngine
        inproc.RoundEngine = engine  # type: ignore[misc]
        try:
            return run_inproc(
                QuadraticTask(params),
                QuadraticProposerParams(noise=noise, staleness=staleness),
                RunSettings(agents=agents, max_rounds=200, seed=1),
                settings,
            )
        finally:
            inproc.RoundEngine = original  # type: ignore[misc]
    return run_inproc(
        QuadraticTask(params),
        QuadraticProposerParams(noise=noise, staleness=staleness),
        RunSettings(agents=agents, max_rounds=200, seed=1),
        settings,
    )


def a_priori(result: RunResult) -> dict[str, Any]:
    checks = result.ledger.checks()["a_priori"]
    assert checks is not None
    return checks


# -- accounting: an invariant of the books, not evidence ------------------------------------------------------
def test_round_bound_detects_an_accounting_violation() -> None:
    good = round_constants(10.0, 4.0, 0.0, [MergedScore(3.0, 3.0), MergedScore(3.0, 3.0)], tolerance=1e-12)
    assert (good.kappa, good.gamma, good.delta) == (0.6, 1.0, 0.0)
    assert (
        check_accounting(
            good.gap_before, good.gap_after, good.gamma, [MergedScore(3.0, 3.0)] * 2, 1e-12, separable=True
        )
        == []
    )
    # Books that do not balance: the gap fell by 0.5 while gamma 1.0 times sum(Delta) = 5 was recorded.
    bad = check_accounting(10.0, 9.5, 1.0, [MergedScore(5.0, 5.0)], 1e-12)
    assert bad and "g_t+1" in bad[0]
    # A rise of F, and a gap that moved in a round that merged nothing.
    assert any("F rose" in p for p in check_accounting(10.0, 11.0, 1.0, [MergedScore(1.0, -1.0)], 1e-12))
    assert any("nothing merged" in p for p in check_accounting(10.0, 9.0, None, [], 1e-12))
    # A separable merge whose joint improvement is not the sum of its standalone ones.
    assert any(
        "disjoint footprints" in p
        for p in check_accounting(10.0, 8.0, 2 / 3, [MergedScore(1.5, 1.5)] * 2, 1e-12, separable=True)
    )


class _BlindFootprints(QuadraticTask):
    """A quadratic whose footprints claim every block touches only itself: unsound at coupling > 0."""

    def footprint(self, state: Any, block: int, value: Any) -> frozenset[Any]:
        return frozenset({block})


def test_engine_raises_when_the_books_do_not_balance() -> None:
    task = _BlindFootprints(QuadraticParams(blocks=4, dim=2, coupling=0.9, seed=3))
    engine = RoundEngine(task, EngineSettings(strict_accounting=True))
    snap = engine.initial_snapshot()
    from tests.test_engine import exact_proposals  # every block's exact minimizer on the current version

    with pytest.raises(AccountingError, match="disjoint footprints interacted"):
        engine.run_round(snap, exact_proposals(task, snap, task.blocks()), 0)
    lenient = RoundEngine(task, EngineSettings(strict_accounting=False))
    assert (
        lenient.run_round(snap, exact_proposals(task, snap, task.blocks()), 0).record.accounting_violations
        > 0
    )


# -- the a priori bound from problem data ------------------------------------------------------------------------
def test_a_priori_constants_are_those_of_the_block_jacobi_preconditioned_matrix() -> None:
    task = QuadraticTask(INSTANCE)
    ap = task.a_priori()
    assert ap is not None
    d = np.zeros_like(task.a)
    for i in range(INSTANCE.blocks):
        sl = slice(i * INSTANCE.dim, (i + 1) * INSTANCE.dim)
        d[sl, sl] = task.a[sl, sl]
    eig = np.sort(np.linalg.eigvals(np.linalg.solve(d, task.a)).real)
    assert ap.constants["mu"] == pytest.approx(eig[0]) and ap.constants["lambda"] == pytest.approx(eig[-1])
    assert ap.factor["independent"] == pytest.approx(eig[0] / 16)


@pytest.mark.parametrize("policy", ["checked", "independent"])
@pytest.mark.parametrize("coupling", [0.3, 0.6, 0.9])
def test_a_priori_bound_holds_in_every_checked_round_with_exact_corrections(
    coupling: float, policy: str
) -> None:
    for seed in (0, 1):
        result = run(policy=policy, params=QuadraticParams(blocks=8, dim=3, coupling=coupling, seed=seed))
        checks = a_priori(result)
        assert checks["rounds_checked"] > 0
        assert checks["rounds_held"] == checks["rounds_checked"], (coupling, policy, seed)


def test_a_priori_bound_fails_under_noisy_corrections() -> None:
    failures = 0
    for coupling in (0.6, 0.9):
        checks = a_priori(run(noise=0.1, params=QuadraticParams(blocks=8, dim=3, coupling=coupling, seed=0)))
        assert checks["rounds_checked"] > 0
        failures += checks["rounds_checked"] - checks["rounds_held"]
    assert failures > 0


def test_a_priori_bound_fails_under_stale_corrections() -> None:
    checks = a_priori(
        run(staleness=2, params=QuadraticParams(blocks=8, dim=3, coupling=0.9, seed=0), agents=8)
    )
    assert checks["rounds_checked"] > 0 and checks["rounds_held"] < checks["rounds_checked"]


class _WorstSingleEngine(RoundEngine):
    """Merges the least improving proposal alone: worse than the best single one, which the bound assumes."""

    def _select(
        self, state: Any, f0: float, scored: list[Any], graph: Any, meter: Any
    ) -> tuple[set[int], int]:
        if not scored:
            return set(), 0
        return {min(range(len(scored)), key=lambda i: scored[i].gain)}, 0


def test_a_priori_bound_fails_when_the_merge_is_worse_than_the_best_single_proposal() -> None:
    checks = a_priori(run(policy="independent", engine=_WorstSingleEngine))
    assert checks["rounds_checked"] > 0 and checks["rounds_held"] < checks["rounds_checked"]


def test_a_priori_precondition_fails_when_not_every_block_proposes() -> None:
    checks = a_priori(run(agents=4))
    assert checks["rounds_checked"] == 0 and checks["rounds_precondition_failed"] > 0


# -- forecasts -----------------------------------------------------------------------------------------------------
def test_one_step_forecast_is_a_conformal_quantile_of_past_ratios_and_can_miss() -> None:
    gaps = [2.0**-k for k in range(12)]  # ratio 0.5 every step
    assert one_step(gaps[:9]) is None  # 8 ratios: too few for a 90% rank
    assert one_step(gaps) == pytest.approx(gaps[-1] * 0.5)
    assert gaps[-1] * 0.9 > one_step(gaps)  # type: ignore[operator]  # a slower next step is a miss
    assert consecutive_misses([True, False, None, False]) == 2


def _coverage(gaps: list[float], adapt_rate: float) -> float:
    made = [(one_step(gaps[: t + 1], adapt_rate=adapt_rate), gaps[t + 1]) for t in range(len(gaps) - 1)]
    scored = [after <= predicted for predicted, after in made if predicted is not None]
    return sum(scored) / len(scored)


def test_one_step_level_adapts_to_drifting_ratios() -> None:
    """Approaching a noise floor the contraction ratios rise, so the past ones are not exchangeable with the
    next: the plain quantile misses every round; the adaptive level recovers the stated coverage."""
    gaps = [1.0]
    for k in range(150):
        gaps.append(gaps[-1] * (0.5 + 0.48 * (1 - math.exp(-k / 40))))
    assert _coverage(gaps, adapt_rate=0.0) < 0.1
    assert _coverage(gaps, adapt_rate=0.05) >= 0.85


def test_envelope_is_anchored_at_step_w_and_its_eta_is_checked() -> None:
    steps = [
        round_constants(g, g / 2, 0.0, [MergedScore(g / 2, g / 2)], 0.0) for g in (8.0, 4.0, 2.0, 1.0, 0.5)
    ]
    env = envelope_summary(steps, window=2, target=0.25, tolerance=0.0)
    assert env.envelope == pytest.approx([2.0, 1.0, 0.5, 0.25])
    assert (env.rounds, env.hits, env.eta_rounds_predicted, env.eta_rounds_actual) == (3, 3, 5, 5)
    slower = steps[:2] + [round_constants(2.0, 1.5, 0.0, [MergedScore(1.0, 0.5)], 0.0)]
    assert envelope_summary(slower, window=2, target=0.1, tolerance=0.0).hits == 0


def test_aitken_limit_of_a_geometric_sequence_and_of_a_stall() -> None:
    objectives = [10.0 + 5.0 * 0.5**k for k in range(10)]
    f = forecast(objectives, reference=0.0, epsilon=1e-6)
    assert f.limit == pytest.approx(10.0) and f.rate == pytest.approx(0.5)
    assert f.eta_target == "limit" and f.eta_rounds == 10  # 0.5**k * remaining <= 1e-6 * g_0
    stalled = forecast([10.0, 9.0, 8.5, 8.5, 8.5, 8.5, 8.5], reference=0.0)
    assert stalled.limit == 8.5 and stalled.remaining == 0.0 and stalled.eta_rounds == 0


def test_empty_rounds_are_steps() -> None:
    result = run(staleness=2, agents=8, params=QuadraticParams(blocks=8, dim=3, coupling=0.3, seed=0))
    ledger = result.ledger
    empty = [r for r in ledger.records if not r.accepted]
    assert empty and all(r.kappa == 0.0 and r.gamma is None for r in empty)
    assert len(ledger.steps()) == len(ledger.records)
    assert ledger.constants().kappa == 0.0 and ledger.constants().informative is False


# -- whole runs ------------------------------------------------------------------------------------------------------
def test_exact_corrections_reach_the_optimum_and_say_so() -> None:
    result = run(noise=0.0)
    final_gap = result.snapshot.objective - result.engine.reference.value
    assert result.status == "optimal"
    assert final_gap / abs(result.engine.reference.value) <= 1e-8
    c = result.ledger.constants()
    assert c.floor == 0.0 and c.delta_max == 0.0 and c.informative
    assert a_priori(result)["rounds_held"] == a_priori(result)["rounds_checked"] > 0


def test_correction_error_grows_with_noise_and_a_vacuous_bound_says_so() -> None:
    deltas, informative = [], []
    for sigma in (1e-3, 1e-2, 1e-1):
        c = run(noise=sigma).ledger.constants()
        assert c.delta_max is not None
        deltas.append(c.delta_max)
        informative.append(c.informative)
    assert 0 < deltas[0] < deltas[1] < deltas[2]
    assert informative[-1] is False  # the floor at sigma = 0.1 is above the gap (or the rate is 1): no claim


def test_stale_corrections_are_measured_as_correction_error() -> None:
    """4 agents rotate over 16 blocks, so a block comes back every 4 versions and other blocks move between
    two leases of it; an agent up to 4 versions late then uses the correction of the block's previous lease."""
    result = run(staleness=4, agents=4)
    assert result.status in ("optimal", "stalled")
    c = result.ledger.constants()
    assert c.delta_max is not None and c.delta_max > 0


def test_eta_against_a_proven_optimum_follows_the_gaps_own_rate() -> None:
    objectives = [-1.0 + 0.1**k for k in range(5)]  # gap 10^-k against the optimum -1
    f = forecast(objectives, reference=-1.0, epsilon=1e-8, optimum=True)
    assert f.eta_target == "relative_gap" and f.eta_rounds == 4  # 1e-4 -> 1e-8 at a tenth per round
    floor = [-1.0 + 1e-3 + 0.5**k for k in range(12)]  # converging to a floor above the target
    at_floor = forecast(floor, reference=-1.0, epsilon=1e-8, optimum=True)
    assert at_floor.limit == pytest.approx(-1.0 + 1e-3, abs=1e-5)  # the limit shows the floor
    assert forecast(floor, reference=-1.0, epsilon=1e-8).eta_target == "limit"  # against a lower bound


def _one_step_sliced(
    gaps: list[float], window: int, coverage: float, tolerance: float, adapt_rate: float = 0.05
) -> float | None:
    """``one_step`` as it was (9c0358e): the known ratios sliced again from the start for every replay."""
    from coordinator.engine.forecast import ADAPT_HISTORY, _ratio_quantile

    if not gaps or gaps[-1] <= tolerance:
        return None
    ratios = [b / a if a > tolerance else None for a, b in zip(gaps[:-1], gaps[1:], strict=False)]
    needed = 1
    while math.ceil((needed + 1) * coverage) > needed:
        needed += 1

    def known(upto: int) -> list[float]:
        return [r for r in ratios[:upto] if r is not None][-window:]

    miss_rate = 1.0 - coverage
    level_miss = miss_rate
    for s in range(max(0, len(gaps) - 1 - ADAPT_HISTORY), len(gaps) - 1):
        past = known(s)
        if len(past) < needed or gaps[s] <= tolerance:
            continue
        predicted = gaps[s] * _ratio_quantile(past, 1.0 - level_miss)
        missed = gaps[s + 1] > predicted + tolerance
        level_miss += adapt_rate * (miss_rate - float(missed))
    past = known(len(ratios))
    if len(past) < needed:
        return None
    return gaps[-1] * _ratio_quantile(past, 1.0 - level_miss)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 1e-13, 0.5, 1.0]) | st.floats(0.0, 10.0), max_size=260),
    st.integers(-3, 30),
    st.sampled_from([0.5, 0.8, 0.9]),
    st.sampled_from([0.0, 1e-12, 0.1]),
)
def test_one_step_counts_known_ratios_once_with_the_same_forecast(
    gaps: list[float], window: int, coverage: float, tolerance: float
) -> None:
    assert one_step(gaps, window, coverage, tolerance) == _one_step_sliced(gaps, window, coverage, tolerance)
