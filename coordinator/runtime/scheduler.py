"""The scheduler's tick: expire leases, enforce time budgets, close due rounds and windows, evict ended
tasks, for the tasks this round runner serves (``runtime/shards.py``)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from coordinator import errors
from coordinator.runtime import shards
from coordinator.runtime.cache import TaskCache
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.events import TaskEvents
from coordinator.runtime.rounds import Rounds
from coordinator.runtime.window import AsyncMerges
from coordinator.status import TaskStatus
from coordinator.store.base import TERMINAL, TaskRuntime

log = logging.getLogger("blockopt.service")


@dataclass(eq=False)
class Scheduler:
    ctx: ServiceContext
    cache: TaskCache
    events: TaskEvents
    rounds: Rounds
    merges: AsyncMerges
    runners: list[str] = field(default_factory=list, init=False)
    """The live round runners as of this process's last heartbeat (this one alone until it beats)."""
    beat_due: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.runners = [self.ctx.owner]

    async def run_forever(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scheduler tick failed")
            await asyncio.sleep(self.ctx.settings.tick)

    def serves(self, task_id: str) -> bool:
        """Whether this process runs the task's rounds, lease expiry and budgets."""
        runners = self.runners
        return len(runners) == 1 or shards.owner_of(task_id, runners) == self.ctx.owner

    async def _beat(self, now: float) -> None:
        """Tell the store this runner is alive, every third of ``round_lock_ttl``, and learn who else is."""
        if now < self.beat_due:
            return
        ttl = self.ctx.settings.round_lock_ttl
        live = await self.ctx.store.engine_heartbeat(self.ctx.owner, now, ttl)
        self.runners = sorted({*live, self.ctx.owner})
        self.beat_due = now + ttl / 3

    async def leave(self) -> None:
        """A runner that beat hands its tasks over now, not when its beat lapses."""
        if self.beat_due:
            await self.ctx.store.engine_leave(self.ctx.owner)

    async def tick(self) -> None:
        """Expire leases, enforce time budgets, close rounds that are due, for the tasks this runner serves.

        Runners share the tasks (``serves``) instead of each reading every task every tick: with M engine
        processes, each tick's store reads are divided by M, not multiplied."""
        now = self.ctx.clock()
        store = self.ctx.store
        await self._beat(now)
        self._evict_failed_preparations(now)
        cached = set(
            self.cache.known()
        )  # (before the listing: a task created meanwhile is not taken for gone)
        ids = await store.task_ids()
        for gone in cached - set(ids):  # evicted by another process: drop what this one kept of it
            self.cache.forget(gone)
        for task_id in filter(self.serves, ids):
            spec = await self.cache.spec(task_id)
            runtime = await store.get_runtime(spec.id)
            if runtime.status in TERMINAL:
                await self._evict_if_due(task_id, runtime, now)
                continue
            expired = await store.expire_leases(spec.id, now)
            for lease in expired:
                log.info(
                    "task %s: lease on block %d expired (agent %s silent)", spec.id, lease.block, lease.agent
                )
            if spec.budgets.seconds is not None and now - spec.created_at >= spec.budgets.seconds:
                await self.events.finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, "seconds budget spent")
                continue
            if spec.mode == "async":
                await self.merges.tick(spec.id)
            else:
                await self.rounds.maybe_close(spec.id)
            if expired:
                self.events.notify(spec.id)

    def _evict_failed_preparations(self, now: float) -> None:
        """Forget failed preparations ``retain_finished`` seconds after they failed, as finished tasks are."""
        retain = self.ctx.settings.retain_finished
        if retain is None:
            return
        for prep in self.cache.preparations():
            if prep.finished_at is not None and now - prep.finished_at >= retain:
                self.cache.forget(prep.id)

    async def _evict_if_due(self, task_id: str, runtime: TaskRuntime, now: float) -> None:
        """Delete a task ``retain_finished`` seconds after it ended, so a long-lived service's state stays
        bounded (every replica may try: deleting is idempotent)."""
        retain = self.ctx.settings.retain_finished
        if retain is None or runtime.finished_at is None or now - runtime.finished_at < retain:
            return
        if self.cache.lock(task_id).locked():
            return
        try:
            if await self.ctx.store.delete_task(task_id):
                log.info(
                    "task %s evicted: finished %.0f s ago (%s)",
                    task_id,
                    now - runtime.finished_at,
                    runtime.status,
                )
        except errors.NotSupported:
            log.warning("the store cannot delete tasks: --retain-finished has no effect")
            self.ctx.settings = self.ctx.settings.model_copy(update={"retain_finished": None})
            return
        self.cache.forget(task_id)
