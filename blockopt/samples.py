"""A speed-up read from samples of runs, not from one run of each side.

Two runs of one configuration reach a target at very different times (one routing agent against itself on
one seed: 0.13-7.59x; docs/notes/2026-12-07-noise-and-the-opening.md), so "the team is S times faster" read
off one run per side is a draw. With several runs per side the claim "S >= g" has a reading that can fail
on the data alone: pair every reference run with every other run and count the pairings where the
reference took more than g times as long (the Mann-Whitney statistic of the reference's times against g
times the others', as a share: the chance that a reference run is more than g times slower than a run of
the other side). The verdict is "above" or "below" g where the exact one-sided rank-sum test (per seed,
summed over seeds) says so at 5 %, "undecided" where it does not: more runs then, not a reading.
Ties count half.

A run that never reached the target took longer than it ran, no more is known: a pairing it leaves open
counts in ``high`` and not in ``low``, and the verdict names both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class TimedRun:
    """One run's time to the target (None: it never got there) and how long it ran."""

    time: float | None
    length: float


@dataclass(frozen=True)
class Pairings:
    """How a sample of runs compares with a reference sample at speed-up ``goal``."""

    goal: float
    low: float
    """Share of (reference run, run) pairings where the reference surely took more than ``goal`` times as
    long."""
    high: float
    """``low`` plus the pairings a run that stopped short leaves open (it might have been slower)."""
    pairs: int
    p_above: float
    """Exact chance of a share at least ``low`` if both samples were alike (the other's times scaled by
    ``goal``): small when the samples say S is above the goal."""
    p_below: float
    """Exact chance of a share at most ``high`` if both samples were alike: small when they say S is below."""

    LEVEL = 0.05
    """The chance of a wrong verdict the samples must be below."""

    @property
    def verdict(self) -> str:
        """``above`` or ``below`` the goal where the samples say so at ``LEVEL``, else ``undecided``."""
        if self.p_above <= self.LEVEL:
            return "above"
        return "below" if self.p_below <= self.LEVEL else "undecided"

    def __str__(self) -> str:
        share = f"{self.low:.0%}" if self.high == self.low else f"{self.low:.0%}-{self.high:.0%}"
        return (
            f"S >= {self.goal:g} in {share} of {self.pairs} pairings: {self.verdict} "
            f"(p {self.p_above:.3f} above, {self.p_below:.3f} below)"
        )


def pairings(reference: Sequence[TimedRun], others: Sequence[TimedRun], goal: float) -> Pairings:
    """The pairings of one reference sample with one other sample. Raises ValueError on an empty side or a
    goal that is not positive."""
    return stratified([(reference, others)], goal)


def stratified(strata: Sequence[tuple[Sequence[TimedRun], Sequence[TimedRun]]], goal: float) -> Pairings:
    """The pairings within each stratum (a seed: its own target, its own runs), summed; ``p`` from the sum
    of the strata's statistics (a stratified rank-sum test, exact). Raises ValueError on a
    stratum with an empty side or a goal that is not positive."""
    if not strata:
        raise ValueError("no stratum to compare")
    if not goal > 0:
        raise ValueError(f"the speed-up goal must be positive, not {goal}")
    sure = open_ = 0.0
    pairs = 0
    law = [1.0]  # P(sum of the strata's U = k), stratum by stratum
    for reference, others in strata:
        if not reference or not others:
            raise ValueError("both sides of a stratum need at least one run")
        for r in reference:
            for o in others:
                more = _slower(r, o, goal)
                if more is None:
                    open_ += 1
                else:
                    sure += more
        n, m = len(reference), len(others)
        pairs += n * m
        law = _convolve(law, _law(n, m))
    above = min(1.0, sum(law[math.ceil(sure) :]))
    below = min(1.0, sum(law[: math.floor(sure + open_) + 1]))
    return Pairings(goal, sure / pairs, (sure + open_) / pairs, pairs, above, below)


def _slower(r: TimedRun, o: TimedRun, goal: float) -> float | None:
    """1 if the reference run took more than ``goal`` times as long as the other, 0 if not, 0.5 for a tie;
    None when a run that stopped short leaves it open."""
    if r.time is not None and o.time is not None:
        x, y = r.time, goal * o.time
        return 1.0 if x > y else 0.5 if x == y else 0.0
    if r.time is None and o.time is not None:  # r took more than its length
        return 1.0 if goal * o.time < r.length else None
    if r.time is not None:  # o took more than its length
        return 0.0 if r.time < goal * o.length else None
    return None


def _law(n: int, m: int) -> list[float]:
    """P(U = k), k = 0..n*m, for U the count of (x, y) pairs with x above y, x from n and y from m draws of
    one continuous distribution (every order of the n + m values equally likely)."""
    total = math.comb(n + m, n)
    return [_orders(n, m, k) / total for k in range(n * m + 1)]


def _convolve(a: list[float], b: list[float]) -> list[float]:
    out = [0.0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


@cache
def _orders(n: int, m: int, u: int) -> int:
    """Orders of n x's and m y's with exactly ``u`` pairs where an x is above a y."""
    if u < 0 or u > n * m:
        return 0
    if n == 0 or m == 0:
        return 1 if u == 0 else 0
    # the largest value is an x (above all m y's) or a y (above no x)
    return _orders(n - 1, m, u - m) + _orders(n, m - 1, u)
