"""An engine process of the split mode: the round scheduler without HTTP.

It runs ``CoordinatorService``'s scheduler (lease expiry, time budgets, rounds and async windows) over
every task in the shared store, and reacts to ``queued`` messages from the API processes at once
instead of at its next tick. Several engine processes share the tasks: each task has an owner among the
``engine_workers`` processes of a supervisor (``shard_of``, a stable hash), which runs its rounds; the
others leave it alone unless a proposal has waited past ``round_deadline + round_lock_ttl``, then take it
over. Whoever runs a round holds the task's round lock with its fence, so a takeover racing a slow owner
commits at most once. (Engine-only nodes, ``--engine-workers 1`` each, all own every task and share them
through the round lock alone.)

Metrics: task state is read from the store by the API processes' ``/metrics``; an engine process's own
facts (round and scoring durations, CPU and memory) are served at ``HOST:engine_metrics_port + index``
when that is set (HOST: ``blockopt serve --host``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import zlib
from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

from coordinator.metrics import ServiceMetrics
from coordinator.notify import Channel, make_bus
from coordinator.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store import make_store

log = logging.getLogger("blockopt.engine")


def shard_of(task_id: str, engines: int) -> int:
    """The engine (index) that runs a task's rounds while it is alive: a stable hash, the same in every
    process."""
    return zlib.crc32(task_id.encode()) % max(1, engines)


def deferrer(service: CoordinatorService, index: int, engines: int) -> Callable[[str], Awaitable[bool]]:
    """``CoordinatorService.defer`` for engine ``index`` of ``engines``: leave another shard's task to its
    owner, unless a proposal has waited past the round deadline plus the round lock's TTL (the owner is
    gone or stuck: take the task over; the round lock and its fence keep that safe either way)."""
    settings = service.settings
    grace = settings.round_deadline + settings.round_lock_ttl

    async def defer(task_id: str) -> bool:
        if shard_of(task_id, engines) == index:
            return False
        q = await service.store.queue_state(task_id, service.clock())
        return q.oldest is None or service.clock() - q.oldest < grace

    return defer


async def run_engine(
    settings: ServiceSettings, index: int, stop: asyncio.Event, host: str = "127.0.0.1"
) -> None:
    """Serve rounds until ``stop`` is set."""
    registry = CollectorRegistry()
    metrics = ServiceMetrics(registry, settings.metrics_max_tasks, settings.metrics_max_agents)
    registry.unregister(metrics.state)  # task state: the API processes export it from the store
    ProcessCollector(registry=registry)
    store = make_store(settings)
    service = CoordinatorService(settings, store, metrics)
    bus = make_bus(settings)
    service.bus = bus
    service.defer = deferrer(service, index, settings.engine_workers or 1)
    running: set[asyncio.Task[None]] = set()

    async def react(task_id: str) -> None:
        try:
            await service.queued(task_id)
        except Exception as exc:  # e.g. a task deleted meanwhile; the tick re-checks every task anyway
            log.debug("task %s: queued message not handled: %s", task_id, exc)

    def on_message(channel: Channel, task_id: str) -> None:
        task = asyncio.create_task(react(task_id))
        running.add(task)
        task.add_done_callback(running.discard)

    if settings.engine_metrics_port is not None:
        port = settings.engine_metrics_port + index
        start_http_server(port, addr=host, registry=registry)
        log.info("engine worker %d: metrics at http://%s:%d/metrics", index, host, port)
    if bus is not None:
        await bus.start(on_message, ("queued",))
    await service.start()
    log.info("engine worker %d running rounds (owner %s)", index, service.owner)
    try:
        await stop.wait()
    finally:
        for task in list(running):
            task.cancel()
        await service.close()
        if bus is not None:
            await bus.close()
        await store.close()


def engine_main(settings: ServiceSettings, index: int, host: str = "127.0.0.1") -> None:
    """Process entry point: run until SIGTERM or SIGINT."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run_engine(settings, index, stop, host)

    factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop
    with contextlib.suppress(ImportError):
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main())
