"""Stop background tasks and wait for them, without swallowing a cancellation of the task that waits."""

from __future__ import annotations

import asyncio
from typing import Any


async def stop_tasks(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel each task and wait until all have finished, whatever they raised.

    The usual ``task.cancel(); with suppress(CancelledError): await task`` also suppresses a cancellation
    of the waiting task itself when it arrives during that wait: the waiter then runs on as if it had never
    been cancelled. The scheduler did so when its tick was waiting for a round lock's heartbeat to stop,
    and a server shutting down waited for the scheduler forever. Here the waiter's own cancellation
    propagates; the stopped tasks' outcomes are read (so none is reported as never retrieved) and dropped."""
    running = [t for t in tasks if t is not None]
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running)
    for task in running:
        if not task.cancelled():
            task.exception()
