"""Rebuild a task's ``RunLedger`` from the store, so service reports mean what in-process reports mean."""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import asdict, replace
from typing import Any

from coordinator.engine.records import RoundRecord
from coordinator.reports.ledger import (
    Report,
    RunLedger,
    StopRule,
    TaskStatus,
    UsageTotals,
    build_report,
    history_fields,
)
from coordinator.store.base import Head, RoundEntry, TaskRuntime, TaskSpec, UsageRow
from tasks.base import Reference, ReferenceKind


def reference_of(spec: TaskSpec) -> Reference:
    kind: ReferenceKind = "optimum" if spec.reference_kind == "optimum" else "lower_bound"
    return Reference(spec.reference, kind, **spec.reference_provenance)


def bound_dict(constants: Any) -> dict[str, Any] | None:
    """The round's constants as stored beside its record (the ledger rebuilds them from the records)."""
    return asdict(constants) if constants is not None else None


def stop_rule(spec: TaskSpec) -> StopRule:
    return StopRule(
        relative_gap=spec.stop_relative_gap,
        stall_rounds=spec.stop_stall_rounds,
        stall_seconds=spec.stop_stall_seconds,
        time_limit=spec.budgets.seconds,
    )


def stop_status(
    spec: TaskSpec,
    objective: float,
    stalled: int,
    proposals: int,
    quiet_seconds: float = math.inf,
    elapsed: float = math.inf,
    records: list[RoundRecord] | None = None,
) -> TaskStatus | None:
    """The in-process stopping rule (``RunLedger.stop_status``, ``reports/stopping.py``) on the store's data.

    As in ``run_inproc``, stalling is counted in sweeps: with ``proposals`` blocks
    per round, a block comes back once every ceil(n_blocks / proposals) rounds;
    and a lagging proposer's empty rounds (``stop_lag_rounds``) do not count.
    Then it is weighed in time: ``quiet_seconds`` since the last merge, ``elapsed`` since creation, and the
    last improvements of the task's ``records`` (their forecast gain over the time left).
    """
    ledger = RunLedger(
        reference_of(spec), spec.initial_objective, spec.tolerance, spec.window, stalled=stalled
    )
    ledger.records = records or []
    sweep = math.ceil(spec.n_blocks / max(1, min(proposals, spec.n_blocks)))
    rule = stop_rule(spec)
    return ledger.stop_status(
        objective,
        replace(rule, stall_rounds=(rule.stall_rounds + spec.stop_lag_rounds) * sweep),
        quiet_seconds,
        elapsed,
    )


def _plus(base: UsageTotals, sums: Counter[str]) -> UsageTotals:
    return base.model_copy(update={k: getattr(base, k) + v for k, v in sums.items()})


def gaps_ledger(spec: TaskSpec, records: list[RoundRecord]) -> RunLedger:
    """A ledger with the rounds' records only (no usage, verdict counts or clock): enough for the forecasts
    made from the gaps (``predict_next``), as ``ledger_of`` would make them."""
    ledger = RunLedger(
        reference_of(spec), spec.initial_objective, spec.tolerance, spec.window, a_priori=spec.a_priori
    )
    ledger.records = records
    return ledger


def ledger_of(
    spec: TaskSpec,
    runtime: TaskRuntime,
    rounds: list[RoundEntry],
    counters: dict[str, float],
    usage: list[UsageRow],
    now: float | None = None,
) -> RunLedger:
    ledger = RunLedger(
        reference_of(spec), spec.initial_objective, spec.tolerance, spec.window, a_priori=spec.a_priori
    )
    ledger.records = [r.record for r in rounds]
    ledger.verdicts = Counter(
        {
            k: int(v)
            for k, v in counters.items()
            if k in ("accepted", "rejected", "abandoned", "repaired", "rebased")
            or k.startswith(("rejected:", "abandoned:"))
        }
    )
    # summed in plain dicts, one model per total at the end: read every round, and an attribute set on a
    # model per (row, total, field) was a third of a 64-agent round's bookkeeping
    total: Counter[str] = Counter()
    by_model: dict[str, Counter[str]] = {}
    by_agent: dict[str, Counter[str]] = {}
    for row in usage:
        fields = row.usage.model_dump()
        for target in (
            total,
            by_model.setdefault(row.model, Counter()),
            by_agent.setdefault(row.agent, Counter()),
        ):
            target.update(fields)
    if usage:
        ledger.usage = _plus(ledger.usage, total)
        for name, sums in by_model.items():
            ledger.usage_by_model[name] = _plus(ledger.usage_by_model.get(name, UsageTotals()), sums)
        for name, sums in by_agent.items():
            ledger.usage_by_agent[name] = _plus(ledger.usage_by_agent.get(name, UsageTotals()), sums)
    if ledger.records:  # the store keeps usage per agent, not per round: spread it evenly over the rounds
        n = len(ledger.records)
        ledger.round_tokens = [ledger.usage.tokens / n] * n
        ledger.round_agent_seconds = [ledger.usage.seconds / n] * n
    end = runtime.finished_at if runtime.finished_at is not None else (now or time.time())
    ledger.started = time.monotonic() - max(0.0, end - spec.created_at)
    ledger.stalled = runtime.stalled
    return ledger


def task_report(
    spec: TaskSpec,
    runtime: TaskRuntime,
    head: Head,
    rounds: list[RoundEntry],
    counters: dict[str, float],
    usage: list[UsageRow],
    agents: int,
    feasible: bool,
) -> Report:
    status: TaskStatus = runtime.status
    return build_report(
        ledger_of(spec, runtime, rounds, counters, usage),
        task_info={
            "kind": spec.kind,
            "name": spec.name,
            "blocks": spec.n_blocks,
            "params": spec.params,
            "id": spec.id,
            "mode": spec.mode,
        },
        agents=agents,
        merge_policy=spec.merge_policy,
        status=status,
        final_objective=head.objective,
        feasible=feasible,
        status_reason=runtime.reason,
        horizon=spec.stop_when.horizon_rounds if spec.stop_when else 5,
        open_points=runtime.window.points,
    )


def history_row(entry: RoundEntry) -> dict[str, Any]:
    r = entry.record
    return {
        **history_fields(r),
        "version": r.version,
        "engine_seconds": r.engine_seconds,
        "eval_seconds": r.eval_seconds,
        "opened_at": entry.opened_at,
        "closed_at": entry.closed_at,
    }
