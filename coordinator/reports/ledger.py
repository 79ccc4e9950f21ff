"""The run's books: rounds, verdict counts, usage, stopping rule and the report (docs/architecture.md §10).

Both the in-process runner and the service keep one ledger per task, so a
report means the same thing whichever path produced it.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from coordinator.engine import forecast as fc
from coordinator.engine.convergence import RoundConstants, RunConstants, run_constants
from coordinator.engine.records import MergePolicy, Proposal, RoundRecord, UsageTotals, Verdict
from coordinator.reports.anytime import anytime_section, curve
from coordinator.reports.stopping import RECENT_IMPROVEMENTS, StopRule, stall_met
from coordinator.status import TaskStatus
from tasks.base import Reference

__all__ = ["TaskStatus", "RunLedger", "StopRule", "Report", "build_report", "relative_gap"]


def relative_gap(objective: float, reference: Reference) -> float:
    return (objective - reference.value) / max(abs(reference.value), 1e-12)


@dataclass
class RunLedger:
    reference: Reference
    initial_objective: float
    tolerance: float
    window: int = 3
    """W: steps whose constants predict the out-of-sample envelope."""
    records: list[RoundRecord] = field(default_factory=list)
    coverage: float = fc.DEFAULT_COVERAGE
    forecast_window: int = fc.DEFAULT_WINDOW
    epsilon: float = fc.DEFAULT_EPSILON
    a_priori: dict[str, float] | None = None
    """The kind's a priori constants (e.g. μ, λ, m), None when it states none."""
    verdicts: Counter[str] = field(default_factory=Counter)
    usage: UsageTotals = field(default_factory=UsageTotals)
    usage_by_model: dict[str, UsageTotals] = field(default_factory=dict)
    usage_by_agent: dict[str, UsageTotals] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    stalled: int = 0
    round_tokens: list[float] = field(default_factory=list)
    round_agent_seconds: list[float] = field(default_factory=list)

    def add_round(self, record: RoundRecord, proposals: list[Proposal], verdicts: list[Verdict]) -> None:
        self.records.append(record)
        self.round_tokens.append(float(sum(p.usage.tokens for p in proposals)))
        self.round_agent_seconds.append(sum(p.usage.seconds for p in proposals))
        for p in proposals:
            self.usage.add(p.usage)
            self.usage_by_model.setdefault(p.usage.model, UsageTotals()).add(p.usage)
            self.usage_by_agent.setdefault(p.agent, UsageTotals()).add(p.usage)
        for v in verdicts:
            self.verdicts[v.status] += 1
            if v.status == "rejected":
                self.verdicts[f"rejected:{v.code}"] += 1
            if v.repaired:
                self.verdicts["repaired"] += 1
            if v.rebased:
                self.verdicts["rebased"] += 1
        self.stalled = 0 if record.accepted else self.stalled + 1

    def stop_status(
        self,
        objective: float,
        rule: StopRule,
        quiet_seconds: float | None = None,
        elapsed: float | None = None,
    ) -> TaskStatus | None:
        """``optimal`` or ``stalled`` when the stopping rule is met (``reports/stopping.py``), else None.
        ``elapsed`` (seconds since the start; the ledger's clock by default) and ``quiet_seconds`` (since
        the last merge; from the records' times by default) weigh the stall in time."""
        if self.reference.kind == "optimum" and relative_gap(objective, self.reference) <= rule.relative_gap:
            return TaskStatus.OPTIMAL
        if self.stalled < rule.stall_rounds:  # (the cheap test first: most rounds end here)
            return None
        elapsed = self.wall_s if elapsed is None else elapsed
        recent = self.improvements()
        if quiet_seconds is None:
            quiet_seconds = elapsed - recent[-1][0]
        met = stall_met(rule, self.stalled, quiet_seconds, elapsed, recent, self.tolerance)
        return TaskStatus.STALLED if met else None

    def improvements(self, lookback: int = 50) -> list[tuple[float, float]]:
        """The anytime curve's last improvements (time, objective), from the last ``lookback`` records."""
        tail = self.records[-lookback:]
        before, start = self.initial_objective, 0.0
        if len(self.records) > lookback:  # the curve before the tail: its level, from the tail's first time
            before, start = self.records[-lookback - 1].objective, tail[0].t or 0.0
        points = curve([history_fields(r) for r in tail], before)
        return [(max(t, start), f) for t, f in points][-(RECENT_IMPROVEMENTS + 1) :]

    # -- the run's numbers, all from the records (every round is a step) -------------------
    @property
    def gaps(self) -> list[float]:
        return [self.initial_objective - self.reference.value] + [r.gap for r in self.records]

    def steps(self) -> list[RoundConstants]:
        gaps = self.gaps
        return [
            RoundConstants(
                gaps[k], r.gap, r.kappa if r.kappa is not None else 0.0, r.gamma, r.delta or 0.0, r.accepted
            )
            for k, r in enumerate(self.records)
        ]

    def predict_next(self) -> float | None:
        """The one-step forecast for the next round (call before it is scored)."""
        return fc.one_step(self.gaps, self.forecast_window, self.coverage, self.tolerance)

    def pace(self) -> fc.Pace:
        recent = self.records[-self.forecast_window :]
        if not recent:
            return fc.Pace()
        n = len(recent)
        seconds = self.wall_s / max(1, len(self.records))
        return fc.Pace(
            seconds=seconds,
            tokens=sum(self.round_tokens[-n:]) / n if self.round_tokens else None,
            agent_seconds=sum(self.round_agent_seconds[-n:]) / n if self.round_agent_seconds else None,
        )

    def forecast(self, horizon: int = 5) -> fc.Forecast:
        objectives = [self.initial_objective] + [r.objective for r in self.records]
        return fc.forecast(
            objectives,
            self.reference.value,
            window=self.forecast_window,
            epsilon=self.epsilon,
            horizon=horizon,
            pace=self.pace(),
            tolerance=self.tolerance,
            optimum=self.reference.kind == "optimum",
        )

    def constants(self) -> RunConstants:
        return run_constants(self.steps())

    def checks(self) -> dict[str, Any]:
        gaps = self.gaps
        a_priori = None
        if self.a_priori is not None:
            a_priori = {
                "constants": self.a_priori,
                "rounds_checked": sum(1 for r in self.records if r.a_priori_held is not None),
                "rounds_held": sum(1 for r in self.records if r.a_priori_held),
                "rounds_precondition_failed": sum(
                    1 for r in self.records if r.a_priori_precondition is not None
                ),
            }
        one = fc.one_step_summary(
            [r.predicted_gap for r in self.records], gaps[1:], self.coverage, self.tolerance
        )
        env = fc.envelope_summary(
            self.steps(),
            self.window,
            fc.target_gap(self.reference.value, gaps[0], self.epsilon),
            self.tolerance,
        )
        return {"a_priori": a_priori, "one_step": one.model_dump(), "envelope": env.model_dump()}

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started


def solved(feasible: bool, status: TaskStatus, reference: Reference) -> bool:
    """A task is solved when it ended feasible and either optimal, or without a proven optimum to reach it ended
    by its own rules or a budget (e.g. a plan that meets every constraint)."""
    ended = (TaskStatus.STALLED, TaskStatus.DIMINISHING_RETURNS, TaskStatus.BUDGET_EXHAUSTED)
    return feasible and (status == TaskStatus.OPTIMAL or (status in ended and reference.kind != "optimum"))


class Report(BaseModel):
    """The machine-readable result of a run (docs/architecture.md §10): these keys required, extra welcome."""

    task: dict[str, Any]
    agents: int
    merge_policy: MergePolicy
    status: TaskStatus
    rounds: int
    proposals: dict[str, Any]
    objective: dict[str, Any]
    feasible: bool
    wall_s: float
    usage: dict[str, Any]
    status_reason: str | None = None
    """Why the task ended (for ``diminishing_returns``: the forecast that justified it)."""
    constants: RunConstants
    checks: dict[str, Any]
    """``a_priori`` (None when the kind states no a priori bound), ``one_step``, ``envelope``."""
    forecast: fc.Forecast
    accounting_violations: int = 0
    """Rounds whose books did not balance (a bug, never a result; 0 in a healthy run)."""
    history: list[dict[str, Any]]
    solution: Any = None
    """The final solution as the kind presents it (``Task.solution``), filled in by the CLI."""
    selection: dict[str, Any] | None = None
    """Adaptive block selection's learned weights (``Bandit.view``; None under lease order)."""
    anytime: dict[str, Any] | None = None
    """Objective against time, its primal integral and the time to targets (``reports/anytime.py``)."""


def build_report(
    ledger: RunLedger,
    *,
    task_info: dict[str, Any],
    agents: int,
    merge_policy: MergePolicy,
    status: TaskStatus,
    final_objective: float,
    feasible: bool,
    status_reason: str | None = None,
    horizon: int = 5,
    open_points: Sequence[tuple[float, float]] = (),
) -> Report:
    received = sum(ledger.verdicts[k] for k in ("accepted", "rejected"))
    rejected_by = {k.split(":", 1)[1]: n for k, n in ledger.verdicts.items() if k.startswith("rejected:")}
    abandoned_by = {k.split(":", 1)[1]: n for k, n in ledger.verdicts.items() if k.startswith("abandoned:")}
    improvement = ledger.initial_objective - final_objective
    tokens = ledger.usage.tokens
    history = [history_fields(r) for r in ledger.records]
    wall_s = run_seconds(ledger.wall_s, history, open_points)
    return Report(
        task=task_info,
        agents=agents,
        merge_policy=merge_policy,
        status=status,
        rounds=len(ledger.records),
        proposals={
            "received": received,
            "accepted": ledger.verdicts["accepted"],
            "repaired": ledger.verdicts["repaired"],
            "rebased": ledger.verdicts["rebased"],
            "rejected": ledger.verdicts["rejected"],
            "rejected_by_reason": rejected_by,
            "abandoned": ledger.verdicts["abandoned"],
            "abandoned_by_reason": abandoned_by,
        },
        objective={
            "initial": ledger.initial_objective,
            "final": final_objective,
            "reference": ledger.reference.value,
            "reference_kind": ledger.reference.kind,
            "reference_provenance": ledger.reference.provenance(),
            "relative_gap": relative_gap(final_objective, ledger.reference),
        },
        feasible=feasible,
        wall_s=wall_s,
        usage={
            **ledger.usage.model_dump(),
            "by_model": {m: u.model_dump() for m, u in ledger.usage_by_model.items()},
            "by_agent": {a: u.model_dump() for a, u in ledger.usage_by_agent.items()},
            "tokens_per_unit_improvement": tokens / improvement if improvement > 0 else None,
            "tokens_per_solved_task": tokens if solved(feasible, status, ledger.reference) else None,
        },
        status_reason=status_reason,
        constants=ledger.constants(),
        checks=ledger.checks(),
        forecast=ledger.forecast(horizon),
        accounting_violations=sum(r.accounting_violations for r in ledger.records),
        history=history,
        anytime=anytime_section(
            history,
            ledger.initial_objective,
            ledger.reference.value,
            ledger.reference.kind,
            wall_s,
            open_points=open_points,
        ),
    )


def run_seconds(
    wall_s: float, history: Sequence[dict[str, Any]], open_points: Sequence[tuple[float, float]] = ()
) -> float:
    """A report's ``wall_s`` (and its anytime horizon): the ledger's clock, in milliseconds rounded up, and never
    before the run's last timed row or merge. Rows are timed to the microsecond, and a merge scored when the
    run ended can commit after its end was taken: either way a run whose last merge came after its wall time
    read, in ``blockopt compare``, as one that had stopped before it."""
    last = max((t for t in (row.get("t") for row in history) if t is not None), default=0.0)
    last = max([last, wall_s, *(t for t, _ in open_points)])
    return math.ceil(round(last * 1000, 6)) / 1000


def history_fields(r: RoundRecord) -> dict[str, Any]:
    """One history row (docs/architecture.md §10), as the report, the rounds route and the events give it."""
    return {
        "round": r.round,
        "objective": r.objective,
        "gap": r.gap,
        "merged": r.accepted,
        "accepted": r.accepted,
        "interfering": r.interfering,
        "merge_kind": r.merge_kind,
        "kappa": r.kappa,
        "gamma": r.gamma,
        "delta": r.delta,
        "predicted_gap": r.predicted_gap,
        "hit": r.hit,
        "a_priori_rhs": r.a_priori_rhs,
        "a_priori_held": r.a_priori_held,
        "a_priori_precondition": r.a_priori_precondition,
        "proposals": r.proposals,
        "checks": r.checks,
        "regrouped": r.regrouped,
        "selection": r.selection.model_dump() if r.selection is not None else None,
        "t": r.t,
        "agent_seconds": r.agent_seconds,
        "merges": r.merges,
    }
