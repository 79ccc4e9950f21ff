"""The engine-only path: the task's own proposers drive the round engine in one process.

Used for algorithm benchmarks and tests of the theory (``blockopt run --inproc``);
the service path sends the same proposals over HTTP instead.
"""

from __future__ import annotations

import itertools
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from coordinator.engine.contract import contract_envelope
from coordinator.engine.forecast import StopWhen
from coordinator.engine.records import Proposal, Snapshot, Usage
from coordinator.engine.rounds import EngineSettings, RoundEngine, RoundOutcome, timed_reference
from coordinator.reports.ledger import RunLedger, StopRule
from coordinator.reports.stopping import stalled_reason
from coordinator.status import TaskStatus
from tasks import capabilities
from tasks.base import Draft, Proposer, Task


@dataclass(frozen=True)
class RunSettings:
    agents: int = 1
    max_rounds: int | None = 500
    """None: rounds until the time limit or the stop rule ends the run."""
    time_limit: float | None = None
    seed: int = 0
    stop: StopRule = StopRule()
    envelope_window: int = 3
    stop_when: StopWhen | None = None


@dataclass
class RunResult:
    task: Task[Any]
    engine: RoundEngine
    snapshot: Snapshot
    ledger: RunLedger
    status: TaskStatus
    reason: str | None = None


def proposal_of(draft: Draft, agent: str, base_version: int, usage: Usage) -> Proposal:
    """An agent's draft as the proposal an in-process round scores (what the HTTP path builds from a body)."""
    return Proposal(
        id=uuid.uuid4().hex,
        agent=agent,
        block=draft.block,
        value=draft.value,
        base_version=base_version,
        predicted_improvement=draft.predicted_improvement,
        usage=usage,
        exact_minimizer=bool(draft.info.get("exact_minimizer", False)),
    )


def blocks_for_round(n_blocks: int, agents: int, round_index: int) -> list[int]:
    """A rotating assignment: every block is proposed for once every ceil(n/A) rounds."""
    active = min(agents, n_blocks)
    start = (round_index * active) % n_blocks
    return [(start + a) % n_blocks for a in range(active)]


def run_inproc(
    task: Task[Any],
    knobs: BaseModel,
    settings: RunSettings,
    engine_settings: EngineSettings,
    on_round: Callable[[RoundOutcome, RunLedger], None] | None = None,
) -> RunResult:
    capabilities.warm_up(task)  # the proposers' first calls pay for no compiling
    engine = RoundEngine(task, engine_settings, timed_reference(task))  # the ledger's clock starts after it
    snap = engine.initial_snapshot()
    ledger = RunLedger(
        engine.reference,
        snap.objective,
        engine.tolerance,
        settings.envelope_window,
        a_priori=engine.a_priori.constants if engine.a_priori else None,
    )
    proposers: list[Proposer] = [
        task.make_proposer(knobs, seed=settings.seed * 1000 + a) for a in range(settings.agents)
    ]
    # With fewer agents than blocks a block comes back once per sweep, so stalling is counted in sweeps;
    # a lagging proposer (stale views) may legitimately find nothing for `lag` of its leases.
    sweep = math.ceil(task.n_blocks / min(settings.agents, task.n_blocks))
    lag = task.lag_rounds(knobs)
    stop = replace(
        settings.stop,
        stall_rounds=(settings.stop.stall_rounds + lag) * sweep,
        time_limit=settings.stop.time_limit if settings.stop.time_limit is not None else settings.time_limit,
    )
    status, reason = TaskStatus.BUDGET_EXHAUSTED, "rounds or time budget spent"
    agent_seconds = 0.0  # every proposer call's seconds, a declined one's too
    for round_index in range(settings.max_rounds) if settings.max_rounds is not None else itertools.count():
        if settings.time_limit is not None and ledger.wall_s >= settings.time_limit:
            break
        remaining = None if settings.time_limit is None else settings.time_limit - ledger.wall_s
        proposals = []
        for agent, block in enumerate(blocks_for_round(task.n_blocks, settings.agents, round_index)):
            rounds_left = None if settings.max_rounds is None else settings.max_rounds - round_index
            budget = {"rounds": rounds_left, "seconds": remaining}
            contract = contract_envelope(task, snap, block, budget)
            t0 = time.perf_counter()
            draft = proposers[agent].propose(contract)
            seconds = time.perf_counter() - t0
            agent_seconds += seconds
            if draft is None:
                continue
            proposals.append(
                proposal_of(draft, f"agent-{agent}", snap.version, Usage(calls=1, seconds=seconds))
            )
        # Regroup once a whole sweep found nothing: every block has had its chance with this grouping.
        predicted = ledger.predict_next()  # before the round's proposals are scored
        outcome = engine.run_round(
            snap, proposals, round_index, regroup=(ledger.stalled + 1) % sweep == 0, predicted_gap=predicted
        )
        snap = outcome.snapshot
        record = outcome.record.model_copy(
            update={"t": round(ledger.wall_s, 6), "agent_seconds": round(agent_seconds, 6)}
        )
        outcome = replace(outcome, record=record)
        ledger.add_round(record, proposals, outcome.verdicts)
        if on_round is not None:
            on_round(outcome, ledger)
        ended = ledger.stop_status(snap.objective, stop)
        if ended is not None:
            status, reason = (
                ended,
                "stopping rule met (relative gap)"
                if ended == "optimal"
                else stalled_reason(ledger.stalled, ledger.wall_s - ledger.improvements()[-1][0]),
            )
            break
        if settings.stop_when is not None:
            why = settings.stop_when.verdict(
                len(ledger.records), ledger.forecast(settings.stop_when.horizon_rounds)
            )
            if why is not None:
                status, reason = TaskStatus.DIMINISHING_RETURNS, why
                break
    return RunResult(task, engine, snap, ledger, status, reason)
