"""Where a call into a kind runs: on the event loop when its last run was cheap, else in a worker thread."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from coordinator.runtime.cache import BuiltTask
from coordinator.runtime.context import ServiceContext

_T = TypeVar("_T")


@dataclass(eq=False)
class StepRunner:
    """Runs engine steps and other calls into a kind, timed per task (``BuiltTask``) so the next one of the
    same sort knows where to go."""

    ctx: ServiceContext

    async def engine_step(self, built: BuiltTask, step: Callable[..., _T], *args: Any) -> _T:
        """Run one engine step of ``built``'s task: on the loop when its last run was cheap, else in a thread.

        An arrival of a cheap kind scores in ~0.1 ms: a worker thread then costs more in handoff and lock
        contention than it saves the loop; a round that takes seconds must not block it. The last run's
        time decides, so a task whose steps grow moves back to the thread.
        """
        started = time.perf_counter()
        if self._cheap(built.step_seconds):
            result = step(*args)
        else:
            result = await asyncio.to_thread(step, *args)
        built.step_seconds = time.perf_counter() - started
        return result

    async def kind_call(self, built: BuiltTask, what: str, call: Callable[..., _T], *args: Any) -> _T:
        """Call into ``built``'s kind outside an engine step (a lease's contract, feasibility, the solution):
        on the loop while its last ``what`` took under ``inline_step_ms``, else in a worker thread, as
        ``engine_step`` decides. The first call of each goes to a thread: a kind's work is not trusted to
        be quick until it has been."""
        started = time.perf_counter()
        if self._cheap(built.call_seconds.get(what)):
            result = call(*args)
        else:
            result = await asyncio.to_thread(call, *args)
        built.call_seconds[what] = time.perf_counter() - started
        return result

    def _cheap(self, last: float | None) -> bool:
        return last is not None and last * 1000.0 < self.ctx.settings.inline_step_ms
