"""An engine process of the split mode: the round scheduler without HTTP.

It runs ``CoordinatorService``'s scheduler (lease expiry, time budgets, rounds and async windows) over
the tasks it serves, and reacts to ``queued`` messages from the API processes at once instead of at its
next tick. Several engine processes share the tasks by rendezvous hashing over the live engines
(``runtime/shards.py``: each beats in the store every third of ``round_lock_ttl``), and the round lock
(with its fence) guards each round; when an engine dies, its beat and its locks lapse after
``round_lock_ttl`` and the others take its tasks over.

Metrics: task state is read from the store by the API processes' ``/metrics``; an engine process's own
facts (round and scoring durations, CPU and memory) are served at ``HOST:engine_metrics_port + index``
when that is set (HOST: ``blockopt serve --host``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

from coordinator.runtime import heap
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store import make_store
from coordinator.store.bus import Channel, make_bus

log = logging.getLogger("blockopt.engine")


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
    running: set[asyncio.Task[None]] = set()

    async def react(task_id: str) -> None:
        try:
            await service.queued(task_id)
        except Exception as exc:  # e.g. a task deleted meanwhile; the tick re-checks every task anyway
            log.debug("task %s: queued message not handled: %s", task_id, exc)

    def on_message(channel: Channel, task_id: str) -> None:
        if not service.serves(task_id):  # another engine serves it and hears the same message
            return
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
    heap.settle()
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main())
