"""The service's state: settings, store, metrics, clock, and this process's rebuildable caches.

All state is in the store; a ServiceCore holds only caches (built Task objects and the snapshot of the
head they were built at), per-task locks so one round runs at a time in this process, and wake-up events
for long polls. The other runtime modules each add one responsibility on top of it (see service.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from coordinator import errors
from coordinator.engine import adaptive
from coordinator.engine.records import Snapshot
from coordinator.engine.rounds import EngineSettings, RoundEngine
from coordinator.reports import books
from coordinator.runtime import auth
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.preparing import Preparation
from coordinator.settings import ServiceSettings
from coordinator.status import TaskStatus
from coordinator.store.base import AgentRecord, Head, RoundEntry, Store, TaskRuntime, TaskSpec
from tasks.base import Task
from tasks.registry import create_task

if TYPE_CHECKING:
    from coordinator.store.bus import Bus

log = logging.getLogger("blockopt.service")
_T = TypeVar("_T")


@dataclass
class BuiltTask:
    """A task rebuilt from (kind, params) in this process, and the head it last loaded."""

    task: Task[Any]
    engine: RoundEngine
    snapshot: Snapshot
    step_seconds: float | None = None
    """Wall time of this task's last engine step (None: never run, so the first one goes to a thread)."""
    call_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of the last call into the kind outside engine steps, by what it was (``_kind_call``)."""


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def head_of(snap: Snapshot, state: Any, version: int | None = None) -> Head:
    """The stored head of a committed snapshot (``state`` already dumped to JSON)."""
    return Head(
        version=snap.version if version is None else version,
        objective=snap.objective,
        block_versions=list(snap.block_versions),
        state=state,
    )


class ServiceCore:
    """State, caches and the helpers every job uses (build a task, finish it, notify waiters)."""

    AGENT_CACHE = 100_000
    """Verified agents cached per process (cleared when full)."""

    def __init__(
        self,
        settings: ServiceSettings,
        store: Store,
        metrics: ServiceMetrics,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.clock = clock
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """Round-lock owner: host and pid first, so an operator (or a fault test) sees who holds a lock."""
        self.limiter = auth.RateLimiter(settings.rate_per_agent, settings.rate_burst)
        self._built: dict[str, BuiltTask] = {}
        self._preparing: dict[str, Preparation] = {}
        """Tasks created, not stored yet: their kind prepares them in a thread (``runtime/preparing.py``)."""
        self._specs: dict[str, TaskSpec] = {}
        self._agents: dict[tuple[str, str], AgentRecord] = {}
        """(task id, token digest) -> agent: see ``_remember_agent``."""
        self._locks: dict[str, asyncio.Lock] = {}
        self._bandits: dict[str, adaptive.Bandit] = {}
        """Adaptive selection per task: rebuildable, replayed from the stored rounds (``_bandit``)."""
        self._events: dict[str, asyncio.Event] = {}
        self._rounds: dict[str, list[RoundEntry]] = {}
        """Round entries read so far per task: stored rounds never change, so each round's forecast reads
        only the new ones (it read and copied every round of the task, each round: growing with its age)."""
        self._background: set[asyncio.Task[None]] = set()
        self._scheduler: asyncio.Task[None] | None = None
        self.ready = False
        metrics.cache_sizes = self.cache_sizes
        # -- split mode (set by coordinator/api/worker.py and coordinator/runtime/engine_worker.py) --
        self.rounds_here = True
        """False on an API process of the split mode: rounds, lease expiry and budgets run elsewhere."""
        self.bus: Bus | None = None
        """Tells other processes of a proposal queued (API) or a task changed (engine)."""
        self._runners: list[str] = [self.owner]
        """The live round runners as of this process's last heartbeat (``runtime/shards.py``)."""
        self._beat_due = 0.0

    async def spec(self, task_id: str) -> TaskSpec:
        """The task's spec (fixed at creation, so cached per process; NotFound when unknown)."""
        spec = self._specs.get(task_id)
        if spec is None:
            prep = self._preparing.get(task_id)
            if prep is not None and prep.reason is None:
                raise errors.TaskPreparing(
                    "the task is being prepared (its kind computes its reference and first plan); "
                    "retry shortly",
                    retry_after=self.settings.prepare_retry_after,
                )
            if prep is not None:
                raise errors.TaskFinished(
                    f"the task has ended (failed): {prep.reason}", task_id=task_id, status=prep.status
                )
            spec = self._specs[task_id] = await self.store.get_task(task_id)
        return spec

    async def _runtime(self, task_id: str) -> TaskRuntime:
        """The task's runtime. A task gone from the store (evicted by another process: an API process of
        the split mode never evicts) leaves this process's caches too, or its spec and build would stay."""
        try:
            return await self.store.get_runtime(task_id)
        except errors.NotFound:
            self.forget(task_id)
            raise

    async def _runtime_and_version(self, task_id: str) -> tuple[TaskRuntime, int]:
        """``_runtime`` and the head's version in one store call (what a lease reads)."""
        try:
            return await self.store.runtime_and_version(task_id)
        except errors.NotFound:
            self.forget(task_id)
            raise

    def _lock(self, task_id: str) -> asyncio.Lock:
        return self._locks.setdefault(task_id, asyncio.Lock())

    def _blocks_lock(self, task_id: str) -> asyncio.Lock:
        """Held while an arrival may regroup the blocks nobody holds, and while a lease is taken (this
        process's leases; another replica's lease meanwhile makes at worst a ``stale_base`` answer)."""
        return self._locks.setdefault(f"blocks:{task_id}", asyncio.Lock())

    def _regrouping(self, spec: TaskSpec) -> AbstractAsyncContextManager[Any]:
        """``_blocks_lock`` where any commit may regroup the blocks nobody holds (``regroup_after:
        arrival``): an arrival, or a round of idle reports run through the rounds path; else nothing."""
        if spec.regroup_after == "arrival":
            return self._blocks_lock(spec.id)
        return contextlib.nullcontext()

    def _forms_leases(self, spec: TaskSpec, task: Task[Any]) -> bool:
        """Whether this service forms each lease's block at lease time (``Task.form_lease``): an async task
        of a kind that offers it, where leases and merges run in one process. In the split mode the API
        processes lease and the engines merge: a lease there would take the round lock from the merges, so
        blocks are regrouped after arrivals instead (``regroup_after``), as for any kind."""
        return spec.mode == "async" and task.neighbourhood_leases and self.bus is None

    def changed(self, task_id: str) -> asyncio.Event:
        """An event set at the task's next change (take it before reading the store)."""
        return self._events.setdefault(task_id, asyncio.Event())

    def _notify(self, task_id: str) -> None:
        self.wake(task_id)
        if self.bus is not None:
            self._spawn(self.bus.publish("changed", task_id))

    def wake(self, task_id: str) -> None:
        """Wake this process's long polls of the task (``_notify`` also tells the other processes)."""
        event = self._events.pop(task_id, None)
        if event is not None:
            event.set()

    async def _handed_off(self, task_id: str) -> bool:
        """On an API process of the split mode, tell the engines a round may be due instead of running it."""
        if self.rounds_here:
            return False
        if self.bus is not None:
            await self.bus.publish("queued", task_id)
        return True

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _build(self, spec: TaskSpec, head: Head) -> BuiltTask:
        built = self._built.get(spec.id)
        if built is not None and built.snapshot.version == head.version:
            return built
        # One build, and one load per new head, however many requests ask at once (an API process of the
        # split mode learns of each commit from the store, and every long poll it wakes asks together).
        async with self._lock(f"load:{spec.id}"):
            built = self._built.get(spec.id)
            if built is None:

                def make() -> BuiltTask:
                    task = create_task(spec.kind, spec.params)
                    engine = RoundEngine(
                        task,
                        EngineSettings(
                            merge_policy=spec.merge_policy,
                            screen_exact_checks=self.settings.screen_exact_checks,
                        ),
                    )
                    return BuiltTask(task, engine, self._snapshot_of(task, head))

                built = await asyncio.to_thread(make)
                self._built[spec.id] = built
            elif built.snapshot.version != head.version:
                built.snapshot = await asyncio.to_thread(self._snapshot_of, built.task, head)
        return built

    async def _engine_step(self, built: BuiltTask, step: Callable[..., _T], *args: Any) -> _T:
        """Run one engine step of ``built``'s task: on the loop when its last run was cheap, else in a thread.

        An arrival of a cheap kind scores in ~0.1 ms: a worker thread then costs more in handoff and lock
        contention than it saves the loop; a round that takes seconds must not block it. The last run's
        time decides, so a task whose steps grow moves back to the thread.
        """
        started = time.perf_counter()
        last = built.step_seconds
        if last is not None and last * 1000.0 < self.settings.inline_step_ms:
            result = step(*args)
        else:
            result = await asyncio.to_thread(step, *args)
        built.step_seconds = time.perf_counter() - started
        return result

    async def _kind_call(self, built: BuiltTask, what: str, call: Callable[..., _T], *args: Any) -> _T:
        """Call into ``built``'s kind outside an engine step (a lease's contract, feasibility, the solution):
        on the loop while its last ``what`` took under ``inline_step_ms``, else in a worker thread, as
        ``_engine_step`` decides. The first call of each goes to a thread: a kind's work is not trusted to
        be quick until it has been."""
        started = time.perf_counter()
        last = built.call_seconds.get(what)
        if last is not None and last * 1000.0 < self.settings.inline_step_ms:
            result = call(*args)
        else:
            result = await asyncio.to_thread(call, *args)
        built.call_seconds[what] = time.perf_counter() - started
        return result

    async def _bandit(self, spec: TaskSpec) -> adaptive.Bandit | None:
        """The task's adaptive selection (None: lease order), brought up to date with its stored rounds."""
        bandit = self._bandits.get(spec.id)
        if bandit is None:
            bandit = adaptive.bandit_of(spec.selection, spec.neighbourhoods)
            if bandit is None or spec.mode != "rounds":
                return None
            self._bandits[spec.id] = bandit
        entries = await self.store.rounds(spec.id, since=bandit.rounds)
        return bandit.replay(spec.initial_objective, [e.record for e in entries])

    @staticmethod
    def _snapshot_of(task: Task[Any], head: Head) -> Snapshot:
        return Snapshot(head.version, head.objective, tuple(head.block_versions), task.load_state(head.state))

    async def _finish(self, task_id: str, status: TaskStatus, reason: str) -> None:
        if await self.store.finish(task_id, status, reason, self.clock()):
            log.info("task %s %s: %s", task_id, status, reason)
        self._notify(task_id)

    async def _known_rounds(self, task_id: str) -> list[RoundEntry]:
        """The task's stored rounds, read once per process: each call reads only the ones added since."""
        known = self._rounds.setdefault(task_id, [])
        since = len(known)
        fresh = await self.store.rounds(task_id, since=since)
        known.extend(fresh[len(known) - since :])  # (another call may have added some meanwhile)
        return known

    async def _ledger(self, task_id: str) -> Any:
        spec = await self.spec(task_id)
        known = await self._known_rounds(task_id)
        return books.ledger_of(
            spec,
            await self.store.get_runtime(task_id),
            list(known),
            {},
            await self.store.usage(task_id),
            self.clock(),
        )

    async def _predict_next(self, task_id: str) -> float | None:
        """``_ledger(task_id).predict_next()``, from the rounds' gaps alone: asked before every round, it
        read and summed every agent's usage rows and the runtime for a forecast that uses neither."""
        spec = await self.spec(task_id)
        known = await self._known_rounds(task_id)
        return books.gaps_ledger(spec, [r.record for r in known]).predict_next()

    def forget(self, task_id: str) -> None:
        """Drop this process's caches of a task that no longer exists."""
        self._built.pop(task_id, None)
        self._specs.pop(task_id, None)
        self._locks.pop(task_id, None)
        self._bandits.pop(task_id, None)
        self._rounds.pop(task_id, None)
        self._locks.pop(f"load:{task_id}", None)
        self._locks.pop(f"blocks:{task_id}", None)
        self._notify(task_id)
        for key in [k for k in self._agents if k[0] == task_id]:
            del self._agents[key]

    def cache_sizes(self) -> dict[str, int]:
        """What this process holds per task (the soak benchmark watches these stay bounded)."""
        return {
            "built": len(self._built),
            "specs": len(self._specs),
            "locks": len(self._locks),
            "bandits": len(self._bandits),
            "rounds": len(self._rounds),
            "events": len(self._events),
            "agents": len(self._agents),
            "background": len(self._background),
        }
