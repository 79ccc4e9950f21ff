"""The run's books: rounds, verdict counts, usage, stopping rule and the report (DESIGN §10).

Both the in-process runner and the service keep one ledger per task, so a
report means the same thing whichever path produced it.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from coordinator.convergence import BoundSummary, RoundBound, summarize
from coordinator.records import MergePolicy, Proposal, RoundRecord, Usage, Verdict
from tasks.base import Reference

TaskStatus = Literal["running", "converged", "budget_exhausted", "stopped", "failed"]


@dataclass(frozen=True)
class StopRule:
    relative_gap: float = 1e-10
    """Converged when (F − F_ref) / |F_ref| falls to this (only against a proven optimum)."""
    stall_rounds: int = 3
    """Converged when this many rounds in a row merge nothing."""


def relative_gap(objective: float, reference: Reference) -> float:
    return (objective - reference.value) / max(abs(reference.value), 1e-12)


class UsageTotals(BaseModel):
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0

    def add(self, usage: Usage) -> None:
        self.tokens += usage.tokens
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.reasoning_tokens += usage.reasoning_tokens
        self.calls += usage.calls
        self.seconds += usage.seconds


@dataclass
class RunLedger:
    reference: Reference
    initial_objective: float
    tolerance: float
    window: int = 3
    records: list[RoundRecord] = field(default_factory=list)
    bounds: list[RoundBound] = field(default_factory=list)
    verdicts: Counter[str] = field(default_factory=Counter)
    usage: UsageTotals = field(default_factory=UsageTotals)
    usage_by_model: dict[str, UsageTotals] = field(default_factory=dict)
    usage_by_agent: dict[str, UsageTotals] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    stalled: int = 0

    def add_round(
        self, record: RoundRecord, bound: RoundBound | None, proposals: list[Proposal], verdicts: list[Verdict]
    ) -> None:
        self.records.append(record)
        if bound is not None:
            self.bounds.append(bound)
        for p in proposals:
            self.usage.add(p.usage)
            self.usage_by_model.setdefault(p.usage.model, UsageTotals()).add(p.usage)
            self.usage_by_agent.setdefault(p.agent, UsageTotals()).add(p.usage)
        for v in verdicts:
            self.verdicts[v.status] += 1
            if v.status == "rejected":
                self.verdicts[f"rejected:{v.code}"] += 1
        self.stalled = 0 if record.accepted else self.stalled + 1

    def converged(self, objective: float, rule: StopRule) -> bool:
        if self.reference.kind == "optimum" and relative_gap(objective, self.reference) <= rule.relative_gap:
            return True
        return self.stalled >= rule.stall_rounds

    def summary(self) -> BoundSummary:
        return summarize(self.bounds, self.window, self.tolerance)

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started


def solved(feasible: bool, status: TaskStatus, reference: Reference) -> bool:
    """A task is solved when it ended feasible and either converged or has a non-trivial feasibility
    (routing: a collision-free plan, reached before a time or token budget ran out)."""
    return feasible and (status == "converged" or (status == "budget_exhausted" and reference.kind != "optimum"))


class Report(BaseModel):
    """The machine-readable result of a run (DESIGN §10); extra keys are welcome, these are required."""

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
    bound: BoundSummary
    history: list[dict[str, Any]]
    solution: Any = None
    """The final solution as the kind presents it (``Task.solution``), filled in by the CLI."""


def build_report(
    ledger: RunLedger,
    *,
    task_info: dict[str, Any],
    agents: int,
    merge_policy: MergePolicy,
    status: TaskStatus,
    final_objective: float,
    feasible: bool,
) -> Report:
    received = sum(ledger.verdicts[k] for k in ("accepted", "rejected"))
    rejected_by = {k.split(":", 1)[1]: n for k, n in ledger.verdicts.items() if k.startswith("rejected:")}
    abandoned_by = {k.split(":", 1)[1]: n for k, n in ledger.verdicts.items() if k.startswith("abandoned:")}
    improvement = ledger.initial_objective - final_objective
    tokens = ledger.usage.tokens
    return Report(
        task=task_info,
        agents=agents,
        merge_policy=merge_policy,
        status=status,
        rounds=len(ledger.records),
        proposals={
            "received": received,
            "accepted": ledger.verdicts["accepted"],
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
            "relative_gap": relative_gap(final_objective, ledger.reference),
        },
        feasible=feasible,
        wall_s=round(ledger.wall_s, 3),
        usage={
            **ledger.usage.model_dump(),
            "by_model": {m: u.model_dump() for m, u in ledger.usage_by_model.items()},
            "by_agent": {a: u.model_dump() for a, u in ledger.usage_by_agent.items()},
            "tokens_per_unit_improvement": tokens / improvement if improvement > 0 else None,
            "tokens_per_solved_task": tokens if solved(feasible, status, ledger.reference) else None,
        },
        bound=ledger.summary(),
        history=[
            {
                "round": r.round,
                "objective": r.objective,
                "gap": r.gap,
                "accepted": r.accepted,
                "interfering": r.interfering,
                "merge_kind": r.merge_kind,
                "kappa": r.kappa,
                "gamma": r.gamma,
                "delta": r.delta,
                "rhs": r.rhs,
                "held": r.held,
                "proposals": r.proposals,
                "checks": r.checks,
                "regrouped": r.regrouped,
            }
            for r in ledger.records
        ],
    )
