"""When a task ends as ``stalled``: the default stop rule weighs time and forecast, not a count of rounds.

A count of empty rounds is no evidence that nothing is left once rounds are cheap: three empty rounds of
three agents took 3-7 s of a 60 s limit on a 50-robot task (issue 31), and the plan could still improve. So
(the README's paragraph on ``stalled`` says the same):

1. Always: at least ``stall_rounds`` rounds in a row merged nothing (counted in sweeps by the callers, so
   every block had its chances, plus a lagging proposer's allowance). Alone, this is the rule only when
   the task has neither a time limit nor ``stall_seconds``.
2. With ``stall_seconds`` (``--stall-seconds``, ``"stop": {"stall_seconds": S}``): also no merge for S
   seconds (the user chose the patience).
3. Otherwise, with a time limit T: also either no merge for ``stall_fraction`` · T seconds (a fifth of the
   limit by default), or the forecast gain over the time left is below the tolerance: the rate of the
   recent improvements, measured up to now (quiet time lowers it), times the seconds left. The limit is
   what the user was willing to spend; a run stops early only on evidence in seconds, not in rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_STALL_FRACTION = 0.2
"""Share of the time limit without a merge after which a task with a time limit is ``stalled``."""
RECENT_IMPROVEMENTS = 5
"""Improvements of the anytime curve whose rate forecasts the gain over the time left."""


@dataclass(frozen=True)
class StopRule:
    relative_gap: float = 1e-10
    """``optimal`` when (F − F_ref) / |F_ref| falls to this (only against a proven optimum)."""
    stall_rounds: int = 3
    """Rounds in a row that merged nothing, the least ``stalled`` needs (the module docstring)."""
    stall_seconds: float | None = None
    """With it: ``stalled`` also needs this long without a merge (instead of the share of the time limit)."""
    time_limit: float | None = None
    """The task's seconds budget; with it and no ``stall_seconds``, stalling is weighed in time."""
    stall_fraction: float = DEFAULT_STALL_FRACTION


def expected_gain(recent: Sequence[tuple[float, float]], now: float, seconds_left: float) -> float | None:
    """The forecast gain over ``seconds_left``: the improvement rate from the first of ``recent``
    improvement points (time, objective) to ``now``, times the time left. None: fewer than two points
    (no rate to measure)."""
    if len(recent) < 2:
        return None
    (t0, f0), (_, f1) = recent[0], recent[-1]
    if now <= t0:
        return None
    return max(0.0, f0 - f1) / (now - t0) * max(0.0, seconds_left)


def stall_met(
    rule: StopRule,
    stalled_rounds: int,
    quiet_seconds: float,
    elapsed: float,
    recent: Sequence[tuple[float, float]] = (),
    tolerance: float = 0.0,
) -> bool:
    """Whether the task is ``stalled`` (the module docstring's rule). ``stalled_rounds``: empty rounds in a
    row, against ``rule.stall_rounds`` (already scaled by the caller); ``quiet_seconds``: since the last
    merge (or the start); ``elapsed``: since the task was created; ``recent``: the last improvement points
    of the anytime curve."""
    if stalled_rounds < rule.stall_rounds:
        return False
    if rule.stall_seconds is not None:
        return quiet_seconds >= rule.stall_seconds
    if rule.time_limit is None:
        return True
    if quiet_seconds >= rule.stall_fraction * rule.time_limit:
        return True
    gain = expected_gain(recent[-RECENT_IMPROVEMENTS:], elapsed, rule.time_limit - elapsed)
    return gain is not None and gain <= tolerance


def stalled_reason(stalled_rounds: int, quiet_seconds: float) -> str:
    """The ``status_reason`` of a stalled task: what the rule saw, in rounds and in seconds."""
    return (
        f"stopping rule met (stalled rounds: {stalled_rounds} in a row, no merge for {quiet_seconds:.3g} s)"
    )
