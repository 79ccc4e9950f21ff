"""Exact checks of a screened selection: run exactly only what is to be merged (docs/architecture.md §4).

When the kind screens (``Screening``), the round engine selects from predicted gains; this module
then measures the chosen combination exactly and, when it does not improve (or is refused), falls back
best-first by predicted gain, one exact evaluation at a time, at most ``budget`` exact evaluations in all.
A round therefore never scores every proposal exactly, and never merges anything whose exact gain it did
not measure: the committed objective stays exact.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from coordinator.engine.convergence import MergedScore
from coordinator.engine.records import Proposal, ScreenCheck, Status, Verdict
from tasks.base import InvalidProposal


@dataclass
class Verified:
    merge: set[int]
    """The proposals to merge (indexes into the round's screened list); empty when no check improved."""
    gain: float
    """The exact gain of ``merge`` (0.0 when empty)."""
    tolerance: float
    checks: list[ScreenCheck] = field(default_factory=list)
    alone: dict[int, float] = field(default_factory=dict)
    """Exact standalone gains measured on the way (a single-proposal check)."""
    refused: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Proposals the exact check refused on their own: (code, reason)."""
    tried: set[int] = field(default_factory=set)
    """Proposals whose own addition to a merge was checked exactly (the first pick's members, and each
    fallback step's newcomer)."""


class _Checks:
    """Exact evaluations of combinations, each made once and recorded against its screened prediction."""

    def __init__(self, exact: Callable[[set[int]], float], out: Verified) -> None:
        self.exact, self.out = exact, out
        self.known: dict[frozenset[int], float | None] = {}
        self.where: dict[frozenset[int], int] = {}

    def __call__(self, subset: set[int], predicted: float) -> float | None:
        key, out = frozenset(subset), self.out
        if key in self.known:
            return self.known[key]
        self.where[key] = len(out.checks)
        gain: float | None = None
        code: str | None = None
        started = time.perf_counter()
        try:
            gain = self.exact(subset)
        except InvalidProposal as exc:
            code = exc.code
            if len(subset) == 1:
                out.refused[next(iter(subset))] = (exc.code, exc.reason)
        else:
            if len(subset) == 1:
                out.alone[next(iter(subset))] = gain
        seconds = time.perf_counter() - started
        out.checks.append(
            ScreenCheck(proposals=len(subset), predicted=predicted, exact=gain, code=code, seconds=seconds)
        )
        self.known[key] = gain
        return gain

    def take(self, subset: set[int], gain: float | None) -> bool:
        """Keep ``subset`` as the merge when its exact gain beats the current one."""
        if gain is None or gain <= self.out.gain + self.out.tolerance:
            return False
        self.out.merge, self.out.gain = set(subset), gain
        return True


def verify(
    exact: Callable[[set[int]], float],
    screen: Callable[[set[int]], float],
    gains: Sequence[float],
    blocks: Sequence[int],
    chosen: set[int],
    budget: int,
    tolerance: float,
) -> Verified:
    """Measure ``chosen`` exactly; if it does not improve, build a merge best-first by predicted gain.

    ``exact(subset)`` is the exact gain (it may raise ``InvalidProposal``), ``screen(subset)`` the predicted
    one, ``gains[i]`` proposal i's screened standalone gain and ``blocks[i]`` its block. The fallback adds
    one proposal at a time to the best exactly measured merge so far, keeping it only when the exact gain
    grows; it skips a proposal whose block is already in the merge and an addition the screen predicts
    does not pay (screened gain of the trial against the screened gain of the merge: predictions are
    compared with predictions, never with exact gains, whose scale the screen may miss), and it stops when
    ``budget`` exact evaluations have been spent.
    """
    out = Verified(set(), 0.0, tolerance)
    if not chosen or budget < 1:
        return out
    check = _Checks(exact, out)
    first = gains[next(iter(chosen))] if len(chosen) == 1 else screen(chosen)
    if len(chosen) == 1:
        out.tried |= chosen
    if not check.take(chosen, check(chosen, first)):
        merged_prediction = (
            0.0  # the screen's gain of the merge so far: an addition must beat it on the screen
        )
        for i in sorted(range(len(gains)), key=lambda k: -gains[k]):
            if len(out.checks) >= budget:
                break
            trial = out.merge | {i}
            if (
                i in out.refused
                or blocks[i] in {blocks[j] for j in out.merge}
                or frozenset(trial) in check.known
            ):
                continue
            predicted = gains[i] if len(trial) == 1 else screen(trial)
            if predicted <= merged_prediction + tolerance:
                continue  # the screen says adding it does not pay: spend no exact run on it
            out.tried.add(i)
            if check.take(trial, check(trial, predicted)):
                merged_prediction = predicted
    if out.merge:
        out.checks[check.where[frozenset(out.merge)]].merged = True
    return out


def verdicts(
    scored: Sequence[tuple[Proposal, float]],
    selected: set[int],
    verified: Verified,
    committed: bool,
    round_index: int,
    version: int,
) -> list[Verdict]:
    """One verdict per screened-improving proposal (``scored``: proposal, screened gain): the exact
    standalone delta where one was measured, the screened gain always, and why it was not merged."""
    out = []
    for i, (p, screened) in enumerate(scored):
        exact = verified.alone.get(i)
        status: Status = "rejected"
        if committed and i in verified.merge:
            status, code = "accepted", "merged"
            reason = "merged" + (
                f" (rebased from version {p.base_version})" if p.base_version < version else ""
            )
            reason += f"; the merged combination's exact gain {verified.gain:.6g}"
        elif i in verified.refused:
            code, reason = verified.refused[i]
        elif exact is not None and exact <= verified.tolerance:
            code = "not_improving"
            reason = f"exact standalone improvement {exact:.6g} is not positive (screened {screened:.6g})"
        elif i in verified.tried:
            code = "combination_worse"
            reason = "adding it to the exactly checked merge did not improve the objective"
        elif i in selected:
            code = "screen_not_checked"
            reason = (
                "selected by the screen, but its combination did not improve exactly and the fallback's exact"
                f" checks ({len(verified.checks)}) ran out before it"
            )
        else:
            code = "screen_not_selected"
            reason = f"the screen predicted a better combination without it (screened gain {screened:.6g})"
        out.append(
            Verdict(
                proposal_id=p.id,
                block=p.block,
                status=status,
                code=code,
                reason=reason,
                round=round_index,
                predicted=p.predicted_improvement,
                delta=exact,
                screened=screened,
            )
        )
    return out


def books(scored: Sequence[tuple[Proposal, float]], verified: Verified, committed: bool) -> list[MergedScore]:
    """A screened merge's books: one score, the agents' predictions summed against the combination's exact
    gain (no merged proposal has an exact standalone gain to book; ``check_accounting(screened=True)``)."""
    if not committed or not verified.merge:
        return []
    predicted = sum(scored[i][0].predicted_improvement for i in verified.merge)
    return [MergedScore(predicted, verified.gain)]
