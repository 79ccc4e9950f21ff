"""The task runtime behind the API: ``CoordinatorService``, one class assembled from one module per job.

Each runtime module adds one responsibility to the one below it, so each reads on its own and the
public method names the API and the tests call stay on ``CoordinatorService``:

    core        settings, store, metrics, clock; caches, locks and wake-up events (``ServiceCore``)
    budgets     is the task running, what its budgets have left (``Budgeting``)
    round_lock  the round lock across replicas, which owns its heartbeat (``RoundLocking``)
    rounds      rounds mode: quorum or deadline, run and commit a round (``RoundsMode``)
    window      async mode: score each arrival, close windows into round records (``AsyncWindow``)
    leases      lease, renew, release (``Leasing``)
    proposals   submit, long-poll a verdict, the next lease folded in (``Proposing``)
    tasks       create, view, report, stop; join and authenticate agents (``TaskBook``)
    service     lifecycle, the scheduler's tick, eviction of finished tasks (here)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from coordinator import errors
from coordinator.runtime import shards
from coordinator.runtime.tasks import TaskBook
from coordinator.status import TaskStatus
from coordinator.store.base import TERMINAL, TaskRuntime

log = logging.getLogger("blockopt.service")


class CoordinatorService(TaskBook):
    """The service the API calls: every job above, plus lifecycle, the scheduler's tick and eviction."""

    async def start(self) -> None:
        if self.rounds_here:
            self._scheduler = asyncio.create_task(self._schedule_forever(), name="blockopt-scheduler")
        self.ready = True

    async def close(self) -> None:
        self.ready = False
        preparing = [p.job for p in self._preparing.values()]  # (their threads finish on their own)
        tasks = [t for t in [self._scheduler, *self._background, *preparing] if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._beat_due:  # a runner that beat: hand its tasks over now, not when its beat lapses
            with contextlib.suppress(Exception):
                await self.store.engine_leave(self.owner)

    async def _schedule_forever(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scheduler tick failed")
            await asyncio.sleep(self.settings.tick)

    def serves(self, task_id: str) -> bool:
        """Whether this process runs the task's rounds, lease expiry and budgets (``runtime/shards.py``)."""
        runners = self._runners
        return len(runners) == 1 or shards.owner_of(task_id, runners) == self.owner

    async def _beat(self, now: float) -> None:
        """Tell the store this runner is alive, every third of ``round_lock_ttl``, and learn who else is."""
        if now < self._beat_due:
            return
        ttl = self.settings.round_lock_ttl
        live = await self.store.engine_heartbeat(self.owner, now, ttl)
        self._runners = sorted({*live, self.owner})
        self._beat_due = now + ttl / 3

    async def tick(self) -> None:
        """Expire leases, enforce time budgets, close rounds that are due, for the tasks this runner serves.

        Runners share the tasks (``serves``) instead of each reading every task every tick: with M engine
        processes, each tick's store reads are divided by M, not multiplied."""
        now = self.clock()
        await self._beat(now)
        self._evict_failed_preparations(now)
        cached = set(self._specs)  # (before the listing: a task created meanwhile is not taken for gone)
        ids = await self.store.task_ids()
        for gone in cached - set(ids):  # evicted by another process: drop what this one kept of it
            self.forget(gone)
        for task_id in filter(self.serves, ids):
            spec = await self.spec(task_id)
            runtime = await self.store.get_runtime(spec.id)
            if runtime.status in TERMINAL:
                await self._evict_if_due(task_id, runtime, now)
                continue
            expired = await self.store.expire_leases(spec.id, now)
            for lease in expired:
                log.info(
                    "task %s: lease on block %d expired (agent %s silent)", spec.id, lease.block, lease.agent
                )
            if spec.budgets.seconds is not None and now - spec.created_at >= spec.budgets.seconds:
                await self._finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, "seconds budget spent")
                continue
            if spec.mode == "async":
                await self._tick_async_window(spec.id)
            else:
                await self._maybe_close(spec.id)
            if expired:
                self._notify(spec.id)

    def _evict_failed_preparations(self, now: float) -> None:
        """Forget failed preparations ``retain_finished`` seconds after they failed, as finished tasks are."""
        retain = self.settings.retain_finished
        if retain is None:
            return
        for prep in list(self._preparing.values()):
            if prep.finished_at is not None and now - prep.finished_at >= retain:
                self._preparing.pop(prep.id, None)

    async def _evict_if_due(self, task_id: str, runtime: TaskRuntime, now: float) -> None:
        """Delete a task ``retain_finished`` seconds after it ended, so a long-lived service's state stays
        bounded (every replica may try: deleting is idempotent)."""
        retain = self.settings.retain_finished
        if retain is None or runtime.finished_at is None or now - runtime.finished_at < retain:
            return
        if self._lock(task_id).locked():
            return
        try:
            if await self.store.delete_task(task_id):
                log.info(
                    "task %s evicted: finished %.0f s ago (%s)",
                    task_id,
                    now - runtime.finished_at,
                    runtime.status,
                )
        except errors.NotSupported:
            log.warning("the store cannot delete tasks: --retain-finished has no effect")
            self.settings = self.settings.model_copy(update={"retain_finished": None})
            return
        self.forget(task_id)
