"""The measured constants of the convergence bound (DESIGN §6).

Per merged set S_t:  δ_t = Σ|Δ̂_p − Δ_p|,  γ_t = (F_t − F_{t+1}) / ΣΔ_p,  κ_t = ΣΔ̂_p / g_t,
and g_{t+1} ≤ (1 − γ_t κ_t) g_t + γ_t δ_t must hold (a violation is an accounting bug).
Run level: κ = min κ_t, γ = min γ_t, Γ = max γ_t, δ = max δ_t give the envelope
B_{t+1} = max(0, 1 − γκ) B_t + Γδ, a linear rate up to the floor Γδ / (γκ).

The step index t counts rounds that merged something: a round with nothing to
merge is not a step of the iteration, so it neither checks nor moves the bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class MergedScore:
    predicted: float
    """Δ̂_p, the agent's surrogate decrease."""
    actual: float
    """Δ_p, the measured standalone improvement."""


@dataclass(frozen=True)
class RoundBound:
    gap_before: float
    gap_after: float
    kappa: float
    gamma: float
    delta: float
    rhs: float
    held: bool


def round_bound(
    f_before: float,
    f_after: float,
    f_ref: float,
    merged: Sequence[MergedScore],
    tolerance: float,
) -> RoundBound | None:
    """The round's constants and the per-round check; None when nothing was merged.

    ``tolerance`` is the objective's floating-point resolution: a prediction
    error below it counts as exact (so exact corrections give δ = 0, not 1e-15),
    and the inequality is checked up to it.
    """
    if not merged:
        return None
    g0 = f_before - f_ref
    g1 = f_after - f_ref
    sum_actual = sum(m.actual for m in merged)
    sum_pred = sum(m.predicted for m in merged)
    delta = sum(err for m in merged if (err := abs(m.predicted - m.actual)) > tolerance)
    gamma = (f_before - f_after) / sum_actual if sum_actual > 0 else 0.0
    kappa = sum_pred / g0 if g0 > 0 else math.inf
    rhs = g0 - gamma * sum_pred + gamma * delta  # = (1 − γκ) g_t + γ δ, without dividing by g_t
    return RoundBound(g0, g1, kappa, gamma, delta, rhs, held=g1 <= rhs + tolerance)


class BoundSummary(BaseModel):
    """Run-level constants (the report's ``bound`` object)."""

    rounds_checked: int
    rounds_held: int
    kappa: float | None
    gamma_min: float | None
    gamma_max: float | None
    delta_max: float | None
    rate: float | None
    floor: float | None
    envelope_window: int
    envelope_rounds_checked: int
    envelope_rounds_held: int
    envelope: list[float]
    """B_t from constants of all rounds, one per step (B_0 = g_0)."""
    window_envelope: list[float]
    """B_t predicted from the first ``envelope_window`` steps only (out of sample)."""


@dataclass(frozen=True)
class Constants:
    kappa: float
    gamma_min: float
    gamma_max: float
    delta_max: float

    @property
    def rate(self) -> float:
        return max(0.0, 1.0 - self.gamma_min * self.kappa)

    @property
    def floor(self) -> float:
        denom = self.gamma_min * self.kappa
        if self.gamma_max * self.delta_max == 0.0:
            return 0.0
        return self.gamma_max * self.delta_max / denom if denom > 0 else math.inf

    def envelope(self, g0: float, steps: int) -> list[float]:
        out = [g0]
        for _ in range(steps):
            out.append(self.rate * out[-1] + self.gamma_max * self.delta_max)
        return out


def constants_of(bounds: Sequence[RoundBound]) -> Constants | None:
    finite = [b for b in bounds if math.isfinite(b.kappa)]
    if not finite:
        return None
    return Constants(
        kappa=min(b.kappa for b in finite),
        gamma_min=min(b.gamma for b in finite),
        gamma_max=max(b.gamma for b in finite),
        delta_max=max(b.delta for b in finite),
    )


def summarize(bounds: Sequence[RoundBound], window: int = 3, tolerance: float = 0.0) -> BoundSummary:
    """Constants over all steps, and the out-of-sample check of the first-``window`` envelope.

    ``bounds`` are the merged rounds in order; the gap sequence is g_0 = bounds[0].gap_before,
    g_{t+1} = bounds[t].gap_after.
    """
    gaps = [bounds[0].gap_before] + [b.gap_after for b in bounds] if bounds else []
    all_c = constants_of(bounds)
    win_c = constants_of(bounds[:window])
    envelope = all_c.envelope(gaps[0], len(bounds)) if all_c and gaps else []
    window_env = win_c.envelope(gaps[0], len(bounds)) if win_c and gaps else []
    later = range(window + 1, len(gaps))
    held_later = sum(1 for t in later if window_env and gaps[t] <= window_env[t] + tolerance)
    return BoundSummary(
        rounds_checked=len(bounds),
        rounds_held=sum(1 for b in bounds if b.held),
        kappa=all_c.kappa if all_c else None,
        gamma_min=all_c.gamma_min if all_c else None,
        gamma_max=all_c.gamma_max if all_c else None,
        delta_max=all_c.delta_max if all_c else None,
        rate=all_c.rate if all_c else None,
        floor=all_c.floor if all_c else None,
        envelope_window=window,
        envelope_rounds_checked=len(later) if window_env else 0,
        envelope_rounds_held=held_later,
        envelope=envelope,
        window_envelope=window_env,
    )
