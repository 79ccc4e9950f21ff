"""Wake-ups: a task changed (here or, through the bus, in another process), or ended; background jobs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from coordinator.runtime.context import ServiceContext
from coordinator.status import TaskStatus

log = logging.getLogger("blockopt.service")


@dataclass(eq=False)
class Background:
    """Jobs the service starts and does not wait for (a round made due by an answer, a bus message),
    kept so that closing the service cancels them."""

    jobs: set[asyncio.Task[None]] = field(default_factory=set)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        job = asyncio.create_task(coro)
        self.jobs.add(job)
        job.add_done_callback(self.jobs.discard)


@dataclass(eq=False)
class TaskEvents:
    """Per-task events that long polls wait on, set at the task's next change, then dropped."""

    ctx: ServiceContext
    background: Background
    _events: dict[str, asyncio.Event] = field(default_factory=dict, init=False)

    def changed(self, task_id: str) -> asyncio.Event:
        """An event set at the task's next change (take it before reading the store)."""
        return self._events.setdefault(task_id, asyncio.Event())

    def wake(self, task_id: str) -> None:
        """Wake this process's long polls of the task (``notify`` also tells the other processes)."""
        event = self._events.pop(task_id, None)
        if event is not None:
            event.set()

    def notify(self, task_id: str) -> None:
        self.wake(task_id)
        if self.ctx.bus is not None:
            self.background.spawn(self.ctx.bus.publish("changed", task_id))

    async def finish(self, task_id: str, status: TaskStatus, reason: str) -> None:
        """End the task (the store keeps the first ending) and wake its waiters."""
        if await self.ctx.store.finish(task_id, status, reason, self.ctx.clock()):
            log.info("task %s %s: %s", task_id, status, reason)
        self.notify(task_id)

    async def handed_off(self, task_id: str) -> bool:
        """On an API process of the split mode, tell the engines a round may be due instead of running it."""
        if self.ctx.rounds_here:
            return False
        if self.ctx.bus is not None:
            await self.ctx.bus.publish("queued", task_id)
        return True

    def waiting(self) -> int:
        """Tasks with a long poll waiting in this process."""
        return len(self._events)
