"""Preparing a task: everything its kind does before the task can run, in a worker thread.

A kind's reference (a CP-SAT solve), first plan or instance load may take seconds or minutes. Run on the
service's event loop it stalled every request of every task (a plugin's 30 s reference made ``/healthz``
answer in 7 s). ``prepare`` runs in a thread; meanwhile the service keeps a ``Preparation`` for the task,
so its view says ``preparing`` and its joins and leases are told to retry; a preparation that raised leaves
the task ``failed`` with the reason.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from coordinator import errors
from coordinator.engine import adaptive
from coordinator.engine.records import Snapshot
from coordinator.engine.rounds import EngineSettings, RoundEngine
from coordinator.runtime.wire import CreateTask
from coordinator.status import TaskStatus
from coordinator.store.base import TaskSpec
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


def prepare(
    kind: str,
    params: dict[str, Any],
    selection: adaptive.SelectionSettings,
    knobs: BaseModel,
    engine_settings: EngineSettings,
) -> Prepared:
    """Build the task and everything it needs before its first lease (blocking: call it in a thread).

    Raises ``errors.InvalidRequest`` naming the field for parameters the kind refuses."""
    try:
        task = create_task(kind, params)
    except InvalidParams as exc:
        raise errors.InvalidRequest(str(exc), field=f"params.{exc.param}") from None
    try:
        arms = adaptive.arms_of(selection, task.neighbourhoods())
    except ValueError as exc:
        raise errors.InvalidRequest(str(exc), field="selection.generators") from None
    engine = RoundEngine(task, engine_settings)  # the kind's reference() runs here
    snap = engine.initial_snapshot()
    return Prepared(task, engine, snap, task.dump_state(snap.state), arms, task.lag_rounds(knobs))


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


def failure_reason(exc: BaseException) -> str:
    """The sentence a failed preparation leaves in the task's view."""
    message = exc.message if isinstance(exc, errors.BlockoptError) else str(exc)
    first = (message.strip().splitlines() or [""])[0][:500]
    return f"preparing the task failed: {type(exc).__name__}" + (f": {first}" if first else "")
