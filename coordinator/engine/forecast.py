"""Forecasts a run can contradict (docs/architecture.md §5): the one-step forecast, out-of-sample envelope,
and the estimated limit, remaining improvement and ETA a person can act on.

Everything here is a pure function of the gap sequence g_0, g_1, ... (one entry per round: every round
is a step) and, for the envelope, of the per-round constants, so the in-process runner, the service,
the metrics and the benchmark compute the same numbers.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from coordinator.engine.convergence import RoundConstants, constants_of
from coordinator.json_integers import WholeNumbers

DEFAULT_COVERAGE = 0.9
DEFAULT_WINDOW = 20
"""Past contraction ratios used for the one-step forecast."""
DEFAULT_EPSILON = 1e-6
"""Relative gap the ETA aims at."""


def target_gap(reference: float, g0: float, epsilon: float) -> float:
    """The gap at relative gap ε: relative to |F_ref|, or to g_0 when the reference is 0 (nothing to divide by)."""
    return epsilon * (abs(reference) if abs(reference) > 1e-12 else max(g0, 0.0))


DEFAULT_ADAPT_RATE = 0.05
"""Step of adaptive conformal inference (Gibbs & Candès 2021): after a miss the quantile level rises, after
a hit it falls, so coverage holds over a run even when the ratios drift (near a noise floor they rise)."""
ADAPT_HISTORY = 200
"""Past forecasts replayed to set the level (a bound on the work per call; older rounds matter little)."""


def _ratio_quantile(ratios: Sequence[float], level: float) -> float:
    """The conformal quantile: the ⌈(n+1)·level⌉-th smallest ratio. Past the sample, 1: the engine never
    lets F rise, so g_{t+1} ≤ g_t always holds and is the widest forecast worth making."""
    n = len(ratios)
    rank = max(1, math.ceil((n + 1) * level))
    return 1.0 if rank > n else sorted(ratios)[rank - 1]


def one_step(
    gaps: Sequence[float],
    window: int = DEFAULT_WINDOW,
    coverage: float = DEFAULT_COVERAGE,
    tolerance: float = 0.0,
    adapt_rate: float = DEFAULT_ADAPT_RATE,
) -> float | None:
    """B_{t+1} from g_0..g_t only: g_t times a conformal quantile of the last ``window`` ratios g_{s+1}/g_s.

    With n exchangeable past ratios, the ⌈(n+1)·coverage⌉-th smallest bounds the next one with probability
    ≥ coverage; with fewer ratios than that rank needs (n < coverage/(1−coverage)) there is no forecast.
    Ratios are not exchangeable near a noise floor, so the level adapts to the run's own hits and misses
    (adaptive conformal inference): the forecasts of earlier rounds are replayed from the same gaps, and
    ``adapt_rate = 0`` gives the plain quantile.
    """
    if not gaps or gaps[-1] <= tolerance:
        return None
    ratios: list[float | None] = [
        b / a if a > tolerance else None for a, b in zip(gaps[:-1], gaps[1:], strict=False)
    ]
    needed = 1  # the fewest ratios whose conformal rank at ``coverage`` falls inside the sample
    while math.ceil((needed + 1) * coverage) > needed:
        needed += 1

    kept = [r for r in ratios if r is not None]
    counts = [0]  # counts[k]: known ratios among the first k (a slice per call was O(rounds) each time)
    for r in ratios:
        counts.append(counts[-1] + (r is not None))

    def known(upto: int) -> list[float]:
        """The last ``window`` known ratios among the first ``upto`` (``[-window:]`` of them)."""
        c = counts[upto]
        return kept[max(0, c - window) : c] if window > 0 else kept[:c][-window:]

    miss_rate = 1.0 - coverage
    level_miss = miss_rate  # α_t of adaptive conformal inference
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


def hit(predicted: float | None, actual: float, tolerance: float) -> bool | None:
    return None if predicted is None else actual <= predicted + tolerance


def tightness(predicted: float | None, actual: float, tolerance: float) -> float | None:
    """B/g: 1 is a perfect forecast; a miss is below 1."""
    if predicted is None or actual <= tolerance:
        return None
    return predicted / actual


class OneStepSummary(BaseModel):
    coverage_target: float
    rounds: int
    hits: int
    tightness_median: float | None
    tightness: list[float]
    """Every forecast round's B/g, misses included (below 1)."""


def one_step_summary(
    predicted: Sequence[float | None], gaps_after: Sequence[float], coverage: float, tolerance: float
) -> OneStepSummary:
    pairs = [(p, g) for p, g in zip(predicted, gaps_after, strict=True) if p is not None]
    hits = sum(1 for p, g in pairs if g <= p + tolerance)
    tight = [t for p, g in pairs if (t := tightness(p, g, tolerance)) is not None]
    return OneStepSummary(
        coverage_target=coverage,
        rounds=len(pairs),
        hits=hits,
        tightness_median=statistics.median(tight) if tight else None,
        tightness=tight,
    )


class EnvelopeSummary(BaseModel):
    window: int
    rounds: int
    hits: int
    tightness_median: float | None
    eta_rounds_predicted: int | None
    """Steps from the start until the envelope reaches relative gap ε (None: it never does)."""
    eta_rounds_actual: int | None
    informative: bool
    envelope: list[float]
    """B_t for t = W, W+1, ... (anchored at g_W)."""


def envelope_summary(
    steps: Sequence[RoundConstants], window: int, target: float, tolerance: float, horizon: int = 10_000
) -> EnvelopeSummary:
    """Constants of the first W steps predict B_t for t > W, anchored at g_W (out of sample)."""
    gaps = [steps[0].gap_before] + [s.gap_after for s in steps] if steps else []
    actual = next((t for t, g in enumerate(gaps) if g <= target), None)
    c = constants_of(steps[:window]) if len(steps) >= window else None
    if c is None:
        return EnvelopeSummary(
            window=window,
            rounds=0,
            hits=0,
            tightness_median=None,
            eta_rounds_predicted=None,
            eta_rounds_actual=actual,
            informative=False,
            envelope=[],
        )
    later = len(gaps) - 1 - window
    env = c.envelope(gaps[window], later)
    hits = sum(1 for k in range(1, later + 1) if gaps[window + k] <= env[k] + tolerance)
    tight = [
        t for k in range(1, later + 1) if (t := tightness(env[k], gaps[window + k], tolerance)) is not None
    ]
    predicted: int | None = None
    if gaps[window] <= target:
        predicted = window
    elif c.rate < 1.0 and c.floor < target:
        b, k = gaps[window], 0
        while b > target and k < horizon:
            b, k = c.rate * b + c.gamma_max * c.delta_max, k + 1
        predicted = window + k if b <= target else None
    return EnvelopeSummary(
        window=window,
        rounds=later,
        hits=hits,
        tightness_median=statistics.median(tight) if tight else None,
        eta_rounds_predicted=predicted,
        eta_rounds_actual=actual,
        informative=c.informative(gaps[window]),
        envelope=env,
    )


class Forecast(BaseModel):
    """What the next rounds should bring (docs/architecture.md §10, ``forecast``; None where unknown)."""

    limit: float | None
    """F̂∞, geometric extrapolation of the recent decreases (Aitken's Δ² on h-round sums)."""
    remaining: float | None
    """F_t − F̂∞."""
    eta_rounds: int | None
    eta_seconds: float | None
    eta_target: str | None
    """``relative_gap`` (rounds to relative gap ε) or ``limit`` (the limit is above that: rounds to within ε of it)."""
    epsilon: float
    rate: float | None
    """Per-round ratio of successive decreases."""
    horizon_rounds: int
    gain_next_rounds: float | None
    """Forecast improvement over the next ``horizon_rounds`` rounds."""
    gain_per_1k_tokens: float | None
    gain_per_agent_second: float | None


@dataclass(frozen=True)
class Pace:
    """Recent cost of one round: wall seconds, tokens and agent-seconds (means over the forecast window)."""

    seconds: float | None = None
    tokens: float | None = None
    agent_seconds: float | None = None


def forecast(
    objectives: Sequence[float],
    reference: float,
    *,
    window: int = DEFAULT_WINDOW,
    epsilon: float = DEFAULT_EPSILON,
    horizon: int = 5,
    pace: Pace = Pace(),
    tolerance: float = 0.0,
    optimum: bool = False,
) -> Forecast:
    """Extrapolate F_0..F_t. Decreases over the last h rounds (D₁) and the h before (D₀) give the ratio q = D₁/D₀
    per h rounds; if they keep shrinking geometrically, what is left is D₁·q/(1−q) (Aitken's Δ² when h = 1).
    h = min(window, t)//2 smooths rounds in which only some blocks were proposed for.

    With ``optimum`` (the reference is a proven optimum, so the gap itself is known) the ETA to relative gap ε
    follows the gap's own recent rate (g_t/g_{t−k})^{1/k}, k = min(window, t); a floor shows as a slow rate
    and in ``limit``. Against a lower bound, the ETA is to relative gap ε when the limit is below it, else to
    within ε of the limit.
    """
    f = list(objectives)
    t = len(f) - 1
    g0 = f[0] - reference if f else 0.0
    target = target_gap(reference, g0, epsilon)
    limit = remaining = rho = gain = None
    h = min(window, t) // 2
    if h >= 1:
        d1 = max(0.0, f[t - h] - f[t])
        d0 = max(0.0, f[t - 2 * h] - f[t - h])
        q = 0.0 if d1 <= tolerance else (d1 / d0 if d0 > tolerance and d1 < d0 else None)
        if q is not None:  # else not contracting (yet): no limit can be read off these decreases
            rho = q ** (1.0 / h)
            limit = max(f[t] - (d1 * q / (1.0 - q) if q > 0 else 0.0), reference)
            remaining = f[t] - limit
            gain = remaining * (1.0 - rho**horizon)
    eta: int | None = None
    eta_target: str | None = None
    gap_now = f[t] - reference if f else 0.0
    if f and gap_now <= target:
        eta, eta_target = 0, "relative_gap"
    elif (
        optimum and t >= 1
    ):  # the gap is known: its own rate says how far ε is (a floor shows as a slow rate)
        k = min(window, t)
        base = f[t - k] - reference
        ratio = (gap_now / base) ** (1.0 / k) if base > tolerance and gap_now > 0 else None
        if ratio is not None and ratio < 1.0:
            eta, eta_target = max(1, math.ceil(math.log(target / gap_now) / math.log(ratio))), "relative_gap"
    elif limit is not None and remaining is not None and rho is not None:
        reachable = limit - reference < target
        allowed = target - (limit - reference) if reachable else target  # else: to within ε of the limit
        eta_target = "relative_gap" if reachable else "limit"
        eta = (
            0
            if remaining <= allowed
            else (1 if rho <= 0.0 else max(1, math.ceil(math.log(allowed / remaining) / math.log(rho))))
        )
    per_tokens = (gain / (horizon * pace.tokens / 1000.0)) if pace.tokens and gain is not None else None
    per_agent_s = (gain / (horizon * pace.agent_seconds)) if pace.agent_seconds and gain is not None else None
    return Forecast(
        limit=limit,
        remaining=remaining,
        eta_rounds=eta,
        eta_seconds=eta * pace.seconds if (pace.seconds is not None and eta is not None) else None,
        eta_target=eta_target,
        epsilon=epsilon,
        rate=rho,
        horizon_rounds=horizon,
        gain_next_rounds=gain,
        gain_per_1k_tokens=per_tokens,
        gain_per_agent_second=per_agent_s,
    )


def consecutive_misses(hits: Sequence[bool | None]) -> int:
    """One-step misses in a row at the end of the run (rounds without a forecast neither count nor break it)."""
    n = 0
    for h in reversed(hits):
        if h is None:
            continue
        if h:
            break
        n += 1
    return n


class StopWhen(WholeNumbers):
    """Stop a task as ``diminishing_returns`` once the next rounds are forecast to be worth too little.

    The forecast improvement over the next ``horizon_rounds`` rounds, per 1,000 tokens (LLM teams) or per
    agent-second (heuristic teams) at the recent pace, is compared with the threshold that is set.
    """

    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # JSON numbers only (the fuzzer sent strings)
        json_schema_extra={  # the cross-field rule, in the schema: at least one threshold is a number
            "anyOf": [
                {"properties": {name: {"type": "number"}}, "required": [name]}
                for name in ("gain_per_1k_tokens", "gain_per_agent_second")
            ]
        },
    )
    gain_per_1k_tokens: float | None = Field(None, gt=0, description="minimum forecast gain per 1,000 tokens")
    gain_per_agent_second: float | None = Field(
        None, gt=0, description="minimum forecast gain per agent-second"
    )
    horizon_rounds: int = Field(5, ge=1, le=1000, description="rounds the forecast gain is summed over")
    min_rounds: int = Field(
        6, ge=2, description="rounds before the rule may stop a task (the forecast needs some)"
    )

    @model_validator(mode="after")
    def _one_threshold(self) -> StopWhen:
        if self.gain_per_1k_tokens is None and self.gain_per_agent_second is None:
            raise ValueError("stop_when needs gain_per_1k_tokens or gain_per_agent_second")
        return self

    def verdict(self, rounds: int, fc: Forecast) -> str | None:
        """Why the task should stop now (None: keep going)."""
        if rounds < self.min_rounds:
            return None
        for name, limit, value in (
            ("1,000 tokens", self.gain_per_1k_tokens, fc.gain_per_1k_tokens),
            ("agent-second", self.gain_per_agent_second, fc.gain_per_agent_second),
        ):
            if limit is not None and value is not None and value < limit:
                return (
                    f"forecast gain over the next {fc.horizon_rounds} rounds is {value:.4g} per {name}, below"
                    f" the threshold {limit:.4g} (limit {fc.limit}, remaining {fc.remaining})"
                )
        return None
