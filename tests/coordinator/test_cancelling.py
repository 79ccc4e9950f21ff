"""``stop_tasks``: background tasks are stopped and waited for, and the waiter's own cancellation survives."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.cancelling import stop_tasks

pytestmark = pytest.mark.anyio


async def test_a_waiter_cancelled_while_a_task_stops_stays_cancelled() -> None:
    """The scheduler was cancelled while its tick waited for a round lock's heartbeat to stop; the old
    ``suppress(CancelledError)`` ate that cancellation too, the scheduler ran on, and the server's shutdown
    waited for it forever."""
    stopping, release = asyncio.Event(), asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopping.set()
            await release.wait()  # still cleaning up when the waiter is cancelled
            raise

    inner = asyncio.create_task(slow_to_stop())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(stop_tasks(inner))
    await stopping.wait()
    waiter.cancel()
    await asyncio.wait([waiter])
    assert waiter.cancelled()
    release.set()
    await asyncio.wait([inner])
    assert inner.cancelled()


async def test_stopped_tasks_are_all_waited_for_whatever_they_raise() -> None:
    finished: list[str] = []

    async def raises_on_cancel() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            finished.append("raising")
            raise ValueError("raised while stopping")  # what a careless task does

    async def returns_on_cancel() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)
            finished.append("returning")

    tasks = [asyncio.create_task(raises_on_cancel()), asyncio.create_task(returns_on_cancel())]
    await asyncio.sleep(0)
    await stop_tasks(tasks[0], None, tasks[1])
    assert sorted(finished) == ["raising", "returning"]
    assert all(t.done() for t in tasks)
