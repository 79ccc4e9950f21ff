"""The task's round lock across replicas, as an async context manager that owns its heartbeat."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from coordinator import errors
from coordinator.cancelling import stop_tasks
from coordinator.runtime.context import ServiceContext

log = logging.getLogger("blockopt.service")


@dataclass(eq=False)
class RoundLock:
    """The round lock: one replica runs a task's round (or async merge) at a time."""

    ctx: ServiceContext

    @contextlib.asynccontextmanager
    async def holding(self, task_id: str) -> AsyncIterator[int | None]:
        """This replica's fence on the task's round lock (None: another replica holds it), renewed while held.

        Renewing every third of the TTL keeps the TTL, which is how long a task
        waits when its lock holder dies, short however long a round runs. A
        paused process renews nothing, loses the lock, and the fence refuses its
        late commit.
        """
        ttl = self.ctx.settings.round_lock_ttl
        fence = await self.ctx.store.acquire_round_lock(task_id, self.ctx.owner, ttl, self.ctx.clock())
        if fence is None:
            yield None
            return
        heartbeat = asyncio.create_task(self._renew(task_id, fence, ttl))
        try:
            yield fence
        finally:
            try:
                await stop_tasks(heartbeat)
            finally:
                await self.ctx.store.release_round_lock(task_id, fence)

    async def _renew(self, task_id: str, fence: int, ttl: float) -> None:
        while True:
            await asyncio.sleep(ttl / 3)
            try:
                if not await self.ctx.store.renew_round_lock(task_id, fence, ttl, self.ctx.clock()):
                    log.warning("task %s: round lock (fence %d) lost to another replica", task_id, fence)
                    return
            except errors.Unavailable as exc:  # the commit will say whether the lock survived
                log.warning("task %s: round lock not renewed: %s", task_id, exc.message)
            except Exception:  # never let the heartbeat mask what the round itself raises
                log.exception("task %s: round lock heartbeat stopped", task_id)
                return
