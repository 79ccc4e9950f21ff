"""Preparing a task: everything its kind does before the task can run, in a worker thread.

A kind's reference (a CP-SAT solve), first plan or instance load may take seconds or minutes. Run on the
service's event loop it stalled every request of every task (a plugin's 30 s reference made ``/healthz``
answer in 7 s). ``prepare`` runs in a thread; meanwhile the service keeps a ``Preparation`` for the task,
so its view says ``preparing`` and its joins and leases are told to retry; a preparation that raised leaves
the task ``failed`` with the reason. The reference is timed (``Reference.seconds``): the task's clock leaves
its seconds out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from coordinator import errors
from coordinator.engine import adaptive
from coordinator.engine.records import Snapshot
from coordinator.engine.rounds import EngineSettings, RoundEngine, timed_reference
from coordinator.runtime.wire import CreateTask, TaskView
from coordinator.status import TaskStatus
from coordinator.store.base import Budgets, RegroupAfter, TaskSpec
from tasks import capabilities
from tasks.base import Task
from tasks.registry import InvalidParams, create_task


@dataclass(frozen=True)
class Prepared:
    """What the kind computed for a new task: the built task, its engine (reference included), its first
    snapshot and the facts the spec records."""

    task: Task[Any]
    engine: RoundEngine
    snapshot: Snapshot
    state_json: Any
    neighbourhoods: list[str]
    lag_rounds: int
    warm_up_seconds: float = 0.0
    """What the kind's warm-up took (``capabilities.WarmUp``): a cost of this process, which the task's clock
    leaves out as it leaves out the reference."""


def prepare(
    kind: str,
    params: dict[str, Any],
    selection: adaptive.SelectionSettings,
    knobs: BaseModel,
    engine_settings: EngineSettings,
    clock: Callable[[], float] = time.time,
) -> Prepared:
    """Build the task and everything it needs before its first lease (blocking: call it in a thread).

    The engine's reference carries the seconds it took on ``clock`` (the service's: ``Reference.seconds``),
    ``warm_up_seconds`` those of the kind's warm-up.
    Raises ``errors.InvalidRequest`` naming the field for parameters the kind refuses."""
    try:
        task = create_task(kind, params)
    except InvalidParams as exc:
        raise errors.InvalidRequest(str(exc), field=f"params.{exc.param}") from None
    try:
        arms = adaptive.arms_of(
            selection,
            capabilities.neighbourhoods(
                task,
            ),
        )
    except ValueError as exc:
        raise errors.InvalidRequest(str(exc), field="selection.generators") from None
    started = clock()
    capabilities.warm_up(task)  # before the first plan, and before any scoring on the event loop's behalf
    warm_up_seconds = max(0.0, clock() - started)
    engine = RoundEngine(task, engine_settings, timed_reference(task, clock))
    snap = engine.initial_snapshot()
    return Prepared(
        task,
        engine,
        snap,
        capabilities.dump_state(task, snap.state),
        arms,
        task.lag_rounds(knobs),
        warm_up_seconds,
    )


def spec_of(
    task_id: str,
    req: CreateTask,
    ready: Prepared,
    *,
    regroup_after: RegroupAfter,
    budgets: Budgets,
    join_hash: str,
    read_hash: str,
    created_at: float,
) -> TaskSpec:
    """The spec a prepared task is stored with."""
    task, engine = ready.task, ready.engine
    return TaskSpec(
        id=task_id,
        kind=task.kind,
        name=task.name,
        n_blocks=task.n_blocks,
        params=task.params.model_dump(),
        merge_policy=req.merge_policy,
        mode=req.mode,
        regroup_after=regroup_after,
        budgets=budgets,
        proposer=req.proposer.model_dump(),
        reference=engine.reference.value,
        reference_kind=engine.reference.kind,
        reference_provenance=engine.reference.provenance(),
        initial_objective=ready.snapshot.objective,
        tolerance=engine.tolerance,
        window=req.window,
        stop_relative_gap=req.stop.relative_gap,
        stop_stall_rounds=req.stop.stall_rounds,
        stop_stall_seconds=req.stop.stall_seconds,
        stop_lag_rounds=ready.lag_rounds,
        a_priori=engine.a_priori.constants if engine.a_priori else None,
        stop_when=req.stop_when,
        selection=req.selection,
        neighbourhoods=ready.neighbourhoods,
        join_token_hash=join_hash,
        read_token_hash=read_hash,
        created_at=created_at,
    )


@dataclass
class Preparation:
    """A task created but not stored yet: its preparation runs (``job``), or it failed (``reason``)."""

    id: str
    request: CreateTask
    created_at: float
    read_token_hash: str
    job: asyncio.Task[TaskSpec]
    reason: str | None = None
    finished_at: float | None = None

    @property
    def status(self) -> TaskStatus:
        return TaskStatus.PREPARING if self.reason is None else TaskStatus.FAILED


def view_of(prep: Preparation) -> TaskView:
    """The view of a task its kind is still preparing (or failed to): what is known before it runs."""
    req = prep.request
    return TaskView(
        id=prep.id,
        kind=req.kind,
        name=req.kind,
        status=prep.status,
        reason=prep.reason,
        round=0,
        version=0,
        merge_policy=req.merge_policy,
        mode=req.mode,
        budgets=req.budgets,
        usage={"tokens": 0.0, "calls": 0.0},
        created_at=prep.created_at,
        finished_at=prep.finished_at,
    )


def failure_reason(exc: BaseException) -> str:
    """The sentence a failed preparation leaves in the task's view."""
    message = exc.message if isinstance(exc, errors.BlockoptError) else str(exc)
    first = (message.strip().splitlines() or [""])[0][:500]
    return f"preparing the task failed: {type(exc).__name__}" + (f": {first}" if first else "")
