"""The measured constants of a run and the checks that can fail (docs/architecture.md §5).

Per round t (every round is a step; a round that merges nothing has κ_t = 0 and
g_{t+1} = g_t):  δ_t = Σ|Δ̂_p − Δ_p|,  γ_t = (F_t − F_{t+1}) / ΣΔ_p,  κ_t = ΣΔ̂_p / g_t.

Accounting is not evidence: with γ_t measured from the round itself,
g_{t+1} = g_t − γ_tΣΔ_p holds by construction, so ``check_accounting`` is an
invariant of the engine's books (a violation is a bug), never a result.
What can fail: the a priori bound from problem data (``APrioriCheck``), the
one-step forecast and the out-of-sample envelope (``coordinator.engine.forecast``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel


class AccountingError(AssertionError):
    """The round's books do not balance: a bug in scoring, selection or commit, never a finding."""


@dataclass(frozen=True)
class MergedScore:
    predicted: float
    """Δ̂_p, the agent's surrogate decrease."""
    actual: float
    """Δ_p, the measured standalone improvement."""


@dataclass(frozen=True)
class RoundConstants:
    """One step's constants. ``gamma`` is None when nothing merged (γ is undefined for an empty sum)."""

    gap_before: float
    gap_after: float
    kappa: float
    gamma: float | None
    delta: float
    merged: int


def round_constants(
    f_before: float, f_after: float, f_ref: float, merged: Sequence[MergedScore], tolerance: float
) -> RoundConstants:
    """κ_t, γ_t, δ_t of one round; a round that merged nothing gives κ_t = 0, δ_t = 0.

    ``tolerance`` is the objective's floating-point resolution: a prediction
    error below it counts as exact (exact corrections give δ = 0, not 1e-15).
    """
    g0, g1 = f_before - f_ref, f_after - f_ref
    if not merged:
        return RoundConstants(g0, g1, 0.0, None, 0.0, 0)
    sum_actual = sum(m.actual for m in merged)
    sum_pred = sum(m.predicted for m in merged)
    delta = sum(err for m in merged if (err := abs(m.predicted - m.actual)) > tolerance)
    gamma = (f_before - f_after) / sum_actual if sum_actual > 0 else 0.0
    kappa = sum_pred / g0 if g0 > tolerance else math.inf
    return RoundConstants(g0, g1, kappa, gamma, delta, len(merged))


def check_accounting(
    gap_before: float,
    gap_after: float,
    gamma: float | None,
    merged: Sequence[MergedScore],
    tolerance: float,
    separable: bool = False,
    screened: bool = False,
) -> list[str]:
    """What is wrong with one round's books ([] when they balance).

    - F never rises (the engine never commits a round that makes F worse);
    - g_{t+1} = g_t − γ_tΣΔ_p with the γ_t that was recorded (and g unchanged when nothing merged);
    - a merge of proposals with disjoint footprints (``separable``) has γ_t = 1: its improvement is the sum
      of the standalone ones, or the footprints missed an interaction;
    - a screened merge (``screened``: the selection used predicted gains, so no Δ_p is a standalone exact
      gain) books one score, the merged combination's exact gain measured before the commit: F must fall
      by exactly that, or the commit is not what was checked.
    """
    problems: list[str] = []
    slack = tolerance * (1 + len(merged)) ** 2
    if gap_after > gap_before + slack:
        problems.append(f"F rose: gap {gap_before:.17g} -> {gap_after:.17g}")
    if not merged:
        if abs(gap_after - gap_before) > slack:
            problems.append(f"nothing merged but the gap moved: {gap_before:.17g} -> {gap_after:.17g}")
        return problems
    total = sum(m.actual for m in merged)
    if gamma is None:
        problems.append("merged proposals without a recorded gamma")
        return problems
    if abs(gap_after - (gap_before - gamma * total)) > slack:
        problems.append(
            f"g_t+1 = {gap_after:.17g} but g_t - gamma*sum(Delta) = {gap_before - gamma * total:.17g}"
        )
    if separable and abs(gap_before - gap_after - total) > slack:
        problems.append(
            f"separable merge improved F by {gap_before - gap_after:.17g}, not by the sum of its standalone"
            f" improvements {total:.17g}: disjoint footprints interacted"
        )
    if screened and (len(merged) != 1 or abs(gap_before - gap_after - total) > slack):
        problems.append(
            f"screened merge improved F by {gap_before - gap_after:.17g}, but its books hold {len(merged)}"
            f" score(s) totalling {total:.17g}, not the one exact gain of the checked combination"
        )
    return problems


@dataclass(frozen=True)
class APrioriCheck:
    rhs: float | None
    """(1 − c)·g_t, or None when the precondition failed (then nothing is checked)."""
    held: bool | None
    precondition_failed: str | None


def a_priori_check(
    factor: float,
    gap_before: float,
    gap_after: float,
    tolerance: float,
    precondition_failed: str | None,
) -> APrioriCheck:
    if precondition_failed is not None:
        return APrioriCheck(None, None, precondition_failed)
    rhs = (1.0 - factor) * gap_before
    return APrioriCheck(rhs, gap_after <= rhs + tolerance, None)


class RunConstants(BaseModel):
    """Run-level constants over every step (the report's ``constants``)."""

    kappa: float | None
    gamma_min: float | None
    gamma_max: float | None
    delta_max: float | None
    rate: float | None
    floor: float | None
    informative: bool
    """False when the bound these constants give says nothing: rate ≥ 1, or a floor at or above g_0."""
    steps: int


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

    def envelope(self, anchor: float, steps: int) -> list[float]:
        """B_0 = anchor, B_{k+1} = rate·B_k + Γδ."""
        out = [anchor]
        for _ in range(steps):
            out.append(self.rate * out[-1] + self.gamma_max * self.delta_max)
        return out

    def informative(self, g0: float) -> bool:
        return self.rate < 1.0 and self.floor < g0


def constants_of(steps: Sequence[RoundConstants]) -> Constants | None:
    """κ = min κ_t over every step (an empty round gives κ = 0); γ, Γ over merging steps; δ = max δ_t."""
    finite = [s for s in steps if math.isfinite(s.kappa)]
    if not finite:
        return None
    gammas = [s.gamma for s in finite if s.gamma is not None]
    return Constants(
        kappa=min(s.kappa for s in finite),
        gamma_min=min(gammas) if gammas else 0.0,
        gamma_max=max(gammas) if gammas else 0.0,
        delta_max=max(s.delta for s in finite),
    )


def run_constants(steps: Sequence[RoundConstants]) -> RunConstants:
    c = constants_of(steps)
    if c is None:
        return RunConstants(
            kappa=None,
            gamma_min=None,
            gamma_max=None,
            delta_max=None,
            rate=None,
            floor=None,
            informative=False,
            steps=len(steps),
        )
    return RunConstants(
        kappa=c.kappa,
        gamma_min=c.gamma_min,
        gamma_max=c.gamma_max,
        delta_max=c.delta_max,
        rate=c.rate,
        floor=c.floor,
        informative=c.informative(steps[0].gap_before),
        steps=len(steps),
    )
