"""Where an engine step runs: cheap ones on the event loop, expensive (or unknown) ones in a worker thread."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from coordinator.engine.rounds import EngineSettings, RoundEngine
from coordinator.runtime.cache import BuiltTask
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from tasks.registry import create_task


def built_task() -> BuiltTask:
    task = create_task("quadratic", {"blocks": 2, "dim": 2})
    engine = RoundEngine(task, EngineSettings())
    return BuiltTask(task, engine, engine.initial_snapshot())


def service(inline_step_ms: float) -> CoordinatorService:
    settings = ServiceSettings(inline_step_ms=inline_step_ms)
    return CoordinatorService(settings, MemoryStore(), ServiceMetrics(CollectorRegistry()))


def where(seconds: float = 0.0) -> threading.Thread:
    time.sleep(seconds)
    return threading.current_thread()


@pytest.mark.anyio
async def test_a_cheap_step_moves_onto_the_loop_and_an_expensive_one_back_to_a_thread() -> None:
    svc, built = service(inline_step_ms=50.0), built_task()
    loop_thread = threading.current_thread()
    assert await svc.steps.engine_step(built, where) is not loop_thread  # never run: its cost is unknown
    assert built.step_seconds is not None  # measured
    built.step_seconds = 0.001  # a cheap last run, set: a loaded machine must not make this test's 0 s dear
    assert await svc.steps.engine_step(built, where, 0.06) is loop_thread  # decided by the run before it
    assert built.step_seconds >= 0.06
    assert await svc.steps.engine_step(built, where) is not loop_thread  # 60 ms > 50 ms: back to a thread


@pytest.mark.anyio
async def test_a_zero_threshold_always_hops_to_a_thread() -> None:
    svc, built = service(inline_step_ms=0.0), built_task()
    loop_thread = threading.current_thread()
    for _ in range(3):
        assert await svc.steps.engine_step(built, where) is not loop_thread


@pytest.mark.anyio
async def test_an_expensive_step_leaves_the_loop_free() -> None:
    svc, built = service(inline_step_ms=5.0), built_task()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    background = asyncio.create_task(ticker())
    await svc.steps.engine_step(built, where, 0.1)  # unknown cost: a thread, and the loop keeps ticking
    background.cancel()
    assert ticks >= 10
