"""Where along a run a team gains its speed-up: the reference's time to the team's objective, mark by mark.

S = T1(Q) / TN(Q) is read at one objective Q, near a run's end. The pace at a time t reads the whole curve:
the time the reference runs (one agent's) took to reach the objective the team had at t (their median),
and that over t. Between two marks it is how many reference seconds one team second covered. Sixteen
routing agents that end near x6 covered two to four one-agent seconds a second in their opening and six
later (docs/notes/2026-12-07-the-team-pace.md): each phase has its own lever.

A team run that stopped before a mark (at a target, as ``team_scaling --stop-at`` does) was at least as far
then as where it stopped, and a reference run that never reached an objective took longer than it ran: either
leaves a lower bound, and the reading says ``>=`` where that moves the median.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

Curve = Sequence[tuple[float, float]]
"""(seconds, objective) points of a run, the objective never rising (a best-so-far step curve)."""


@dataclass(frozen=True)
class Trace:
    """A run's curve and when it stopped: after that its objective is unknown, but no worse."""

    curve: Curve
    ended: float


@dataclass(frozen=True)
class PacedRun:
    """A team run read against its reference runs (one agent's, on the same instance and seed)."""

    team: Trace
    reference: Sequence[Trace]


@dataclass(frozen=True)
class TeamPace:
    """The reference's time to a team's objective at ``at``, as a range (equal unless a stop leaves one)."""

    at: float
    low: float
    high: float

    @property
    def known(self) -> bool:
        return self.low == self.high and not math.isinf(self.low)

    def seconds(self) -> str:
        """``34.6``; ``>=34.6`` where a stop leaves a range; ``never`` past reference runs of no end."""
        if math.isinf(self.low):
            return "never"
        return f"{'' if self.known else '>='}{self.low:.1f}"

    def ratio(self) -> str:
        """The pace itself, the reference's time over the team's: ``x3.5``."""
        if math.isinf(self.low) or self.at <= 0:
            return "-"
        return f"{'' if self.known else '>='}x{self.low / self.at:.1f}"


def objective_at(curve: Curve, t: float) -> float:
    """The curve's objective at ``t``: its last point at or before it (none yet: infinite)."""
    got = math.inf
    for at, objective in curve:
        if at > t:
            break
        got = objective
    return got


def time_to(curve: Curve, objective: float) -> float:
    """The first time the curve is at or below ``objective`` (never: infinite)."""
    return next((at for at, value in curve if value <= objective), math.inf)


def reference_time(reference: Sequence[Trace], objective: float) -> tuple[float, float]:
    """The median time the reference runs took to reach ``objective``, as a range: a run that never did
    took longer than it ran, no more is known."""
    times = [time_to(r.curve, objective) for r in reference]
    low = [r.ended if math.isinf(t) else t for r, t in zip(reference, times, strict=True)]
    return statistics.median(low), statistics.median(times)


def pace(runs: Sequence[PacedRun], at: float) -> TeamPace:
    """The team's pace at ``at``: the median over its runs of the reference's time to each run's objective
    then (after a run stopped, to where it stopped, as a lower bound)."""
    low, high = [], []
    for run in runs:
        lo, hi = reference_time(run.reference, objective_at(run.team.curve, min(at, run.team.ended)))
        low.append(lo)
        high.append(hi if at <= run.team.ended else math.inf)
    return TeamPace(at, statistics.median(low), statistics.median(high))


def between(paces: Sequence[TeamPace]) -> list[float | None]:
    """Reference seconds per team second between consecutive marks (None where either end is a bound)."""
    return [
        (b.low - a.low) / (b.at - a.at) if a.known and b.known and b.at > a.at else None
        for a, b in zip(paces, paces[1:], strict=False)
    ]


def reading(paces: Sequence[TeamPace]) -> str:
    """``at 2 / 5 / 10 s: 10.0 / 30.0 / 60.0 s (x5.0 / x6.0 / x6.0); between marks x6.7 / x6.0``."""
    steps = ["-" if v is None else f"x{v:.1f}" for v in between(paces)]
    return (
        f"at {' / '.join(f'{p.at:g}' for p in paces)} s: {' / '.join(p.seconds() for p in paces)} s "
        f"({' / '.join(p.ratio() for p in paces)})"
        + (f"; between marks {' / '.join(steps)}" if steps else "")
    )
