"""The anytime curve of a run: objective against time, its primal integral, and the time to given targets.

A team is worth paying for when it reaches a good plan sooner, so a run is judged by its whole curve, not
by its last value. The primal integral (Berthold 2013, "Measuring the impact of primal heuristics"; CP-SAT
logs the same integral of its gap) sums the gap over time. With F(t) the best objective known at time t
(seconds since the task was created) and F_ref a reference value:

    p(t) = 1                                        before the first solution, or when F(t)·F_ref < 0
    p(t) = 0                                        when F(t) = F_ref (both 0 included)
    p(t) = |F(t) − F_ref| / max(|F(t)|, |F_ref|)    otherwise

    PI(T) = ∫_0^T p(t) dt = Σ_i p(F_i)·(t_{i+1} − t_i)    (F is a step function: it changes at commits)

p lies in [0, 1], so PI(T) lies in [0, T]; the normalized primal integral PI(T)/T lies in [0, 1]. Lower is
better: it rewards reaching good plans early, where a final value alone cannot tell two runs apart. The
kind's first plan counts from t = 0 (its own time is inside the task's clock, not in the curve).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Point = tuple[float, float]
"""(seconds since creation, objective)."""

DEFAULT_RELATIVE_TARGETS = (0.01, 0.005, 0.001)
"""Relative gaps to the reference whose first time the report gives."""


def primal_gap(objective: float, reference: float) -> float:
    """p for one objective value (the module docstring's formula)."""
    if objective == reference:
        return 0.0
    if objective * reference < 0:
        return 1.0
    return abs(objective - reference) / max(abs(objective), abs(reference))


def best_so_far(points: Iterable[Point]) -> list[Point]:
    """The curve's improvements in time order: each point lowers the best objective known before it."""
    out: list[Point] = []
    for t, f in sorted(points, key=lambda p: p[0]):
        if not out or f < out[-1][1]:
            out.append((t, f))
    return out


def curve(history: Sequence[Mapping[str, Any]], initial: float) -> list[Point]:
    """The anytime curve of a run's history rows (each with ``t`` and, async windows, ``merges``): the
    initial plan at t = 0, then every improvement. Rows without a time (recorded before rows had one) add
    nothing."""
    points: list[Point] = [(0.0, initial)]
    for row in history:
        for t, f in row.get("merges") or ():
            points.append((float(t), float(f)))
        if row.get("t") is not None:
            points.append((float(row["t"]), float(row["objective"])))
    return best_so_far(points)


def primal_integral(points: Sequence[Point], reference: float, horizon: float) -> float:
    """PI(horizon) of a step curve (module docstring); p = 1 before its first point."""
    if horizon <= 0:
        return 0.0
    ordered = [(min(max(t, 0.0), horizon), f) for t, f in best_so_far(points)]
    total = ordered[0][0] if ordered else horizon  # no solution yet: p = 1
    for i, (t, f) in enumerate(ordered):
        end = ordered[i + 1][0] if i + 1 < len(ordered) else horizon
        total += primal_gap(f, reference) * max(0.0, end - t)
    return min(total, horizon)


def time_to_target(points: Sequence[Point], target: float) -> float | None:
    """The first time the curve reaches ``target`` (objective ≤ target); None if it never does."""
    for t, f in best_so_far(points):
        if f <= target:
            return t
    return None


def relative_target(reference: float, relative_gap: float) -> float | None:
    """The objective at a relative gap to the reference (None when the reference is 0: nothing to scale)."""
    return reference + relative_gap * abs(reference) if abs(reference) > 1e-12 else None


def anytime_section(
    history: Sequence[Mapping[str, Any]],
    initial: float,
    reference: float,
    reference_kind: str,
    horizon: float,
    targets: Sequence[float] = (),
    relative_gaps: Sequence[float] = DEFAULT_RELATIVE_TARGETS,
    open_points: Sequence[Point] = (),
) -> dict[str, Any]:
    """The report's ``anytime`` section: the curve, its primal integral to ``horizon`` against the task's
    reference (optimum or lower bound: ``reference_kind`` says which), and the time to each target.
    ``open_points``: merges of an async window not yet closed into a row (the run ended inside it)."""
    points = best_so_far([*curve(history, initial), *open_points])
    integral = primal_integral(points, reference, horizon)
    to_targets: list[dict[str, Any]] = []
    for gap in relative_gaps:
        objective = relative_target(reference, gap)
        if objective is not None:
            seconds = time_to_target(points, objective)
            to_targets.append({"relative_gap": gap, "objective": objective, "seconds": seconds})
    for objective in targets:
        to_targets.append(
            {"relative_gap": None, "objective": objective, "seconds": time_to_target(points, objective)}
        )
    timed = any(row.get("t") is not None for row in history)
    return {
        "timed": timed,
        "points": [[t, f] for t, f in points],
        "horizon": horizon,
        "reference": reference,
        "reference_kind": reference_kind,
        "primal_integral": integral,
        "primal_integral_normalized": integral / horizon if horizon > 0 else None,
        "time_to_target": to_targets,
        "agent_seconds": next(
            (row["agent_seconds"] for row in reversed(history) if row.get("agent_seconds") is not None), None
        ),
    }
