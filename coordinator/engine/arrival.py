"""The async path's merge semantics: score one arrival on the head; close a window into a round record.

Async mode merges each arrival on its own (optimistic concurrency), so there is no round to run: each
arrival is scored as the engine's one-proposal round on the head, however old its base (a stale one is
rebased: refused only when it no longer improves there, as ``stale_footprint`` when blocks were committed
after its base). A window of arrivals is
then summed into the same ``RoundRecord`` a rounds-mode round produces, so reports, metrics and the
forecast read both modes alike. Pure: no store, no clock, no I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from coordinator.engine.convergence import MergedScore, RoundConstants, check_accounting, round_constants
from coordinator.engine.records import MergeKind, Proposal, RoundRecord, Snapshot, Verdict
from coordinator.engine.rounds import RoundEngine

log = logging.getLogger("blockopt.engine")


@dataclass(frozen=True)
class Arrival:
    """One arrival's verdict and what it adds to its window."""

    snapshot: Snapshot
    """The head after it: new when it merged, else the head it was scored on."""
    verdict: Verdict
    committed: bool
    merge_kind: MergeKind
    regrouped: bool = False
    accepted: int = 0
    interfering: int = 0
    checks: int = 0
    engine_seconds: float = 0.0
    eval_seconds: float = 0.0


STALE_REFUSALS = frozenset({"not_improving", "screen_not_improving"})
"""Refusals that, for an arrival drafted on an older version, may be due to what merged meanwhile."""


def stale_conflict(snap: Snapshot, p: Proposal, verdict: Verdict) -> Verdict:
    """``verdict``, named ``stale_footprint`` when it refused a stale arrival as not improving on the head
    (after the kind's rebase): blocks committed after its base are in its way (a real conflict: a path
    that now collides, a value whose gain the others' moves took). Footprints do not decide it: a block's
    footprint against its own current value is empty, so the blocks committed since are named instead."""
    if verdict.status != "rejected" or verdict.code not in STALE_REFUSALS or p.base_version >= snap.version:
        return verdict
    since = [b for b, v in enumerate(snap.block_versions) if v > p.base_version and b != p.block]
    if not since:
        return verdict
    named = ", ".join(map(str, since[:8])) + (" ..." if len(since) > 8 else "")
    reason = (
        f"blocks {named} committed after its base version {p.base_version}; rebased on version"
        f" {snap.version}: {verdict.reason}"
    )
    return verdict.model_copy(update={"code": "stale_footprint", "reason": reason})


def score_arrival(
    engine: RoundEngine, snap: Snapshot, p: Proposal, index: int, keep: frozenset[int] | None = None
) -> Arrival:
    """Score one arrival on the head ``snap`` (window ``index``). With ``keep`` (``regroup_after:
    arrival``), the blocks not in it are then regrouped (``regroup``), merged or not: the agent that
    just answered leases next from blocks formed around the plan as it is now.

    A stale arrival (the head moved since its base) is rebased, not refused: the engine scores it on the
    head, repairs it there when it no longer improves (``Rebasing.rebase``) and merges it if it still
    improves. Only a real conflict is refused: its own block changed (``stale_base``), or on the head it
    no longer improves once blocks merged after its base (``stale_footprint``)."""
    regroup = keep is not None
    outcome = engine.run_round(
        snap, [p], index, regroup=regroup, keep=keep or frozenset(), after_merge=regroup
    )
    rec = outcome.record
    return Arrival(
        snapshot=outcome.snapshot,
        verdict=stale_conflict(snap, p, outcome.verdicts[0]),
        committed=outcome.committed,
        merge_kind=rec.merge_kind,
        regrouped=rec.regrouped,
        accepted=rec.accepted,
        interfering=rec.interfering,
        checks=rec.checks,
        engine_seconds=rec.engine_seconds,
        eval_seconds=rec.eval_seconds,
    )


class WindowTally(Protocol):
    """What a window has summed over its arrivals (the store's ``WindowState`` is one; read only here)."""

    @property
    def proposals(self) -> int: ...

    @property
    def accepted(self) -> int: ...

    @property
    def interfering(self) -> int: ...

    @property
    def checks(self) -> int: ...

    @property
    def engine_seconds(self) -> float: ...

    @property
    def eval_seconds(self) -> float: ...

    @property
    def predicted_gap(self) -> float | None: ...

    @property
    def merged(self) -> Sequence[tuple[float, float]]: ...


def window_record(
    index: int,
    version: int,
    start_objective: float,
    objective: float,
    reference: float,
    tolerance: float,
    w: WindowTally,
) -> tuple[RoundRecord, RoundConstants, list[str]]:
    """The round record of a closed window, its constants, and what does not balance in its books.

    Arrivals merged one at a time, each on the head it was scored on: γ = 1 exactly when the books balance.
    """
    merged = [MergedScore(pred, act) for pred, act in w.merged]
    consts = round_constants(start_objective, objective, reference, merged, tolerance)
    problems = check_accounting(
        consts.gap_before, consts.gap_after, consts.gamma, merged, tolerance, separable=True
    )
    predicted = w.predicted_gap
    record = RoundRecord(
        round=index,
        version=version,
        objective=objective,
        gap=objective - reference,
        proposals=w.proposals,
        accepted=w.accepted,
        interfering=w.interfering,
        merge_kind="independent" if w.accepted else "none",
        kappa=consts.kappa,
        gamma=consts.gamma,
        delta=consts.delta,
        predicted_gap=predicted,
        hit=None if predicted is None else consts.gap_after <= predicted + tolerance,
        accounting_violations=len(problems),
        checks=w.checks,
        engine_seconds=w.engine_seconds,
        eval_seconds=w.eval_seconds,
    )
    return record, consts, problems
