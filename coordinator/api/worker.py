"""An API process of the split mode: the HTTP tier without the round engine.

``blockopt serve --engine-workers M`` runs its HTTP processes through ``api_app``: a proposal's
request authenticates (cached per process), validates, writes the proposal to the store, tells the
engines on the bus and waits for its verdict; it never runs a round. The verdict's commit, made by
an engine process, comes back as a ``changed`` message that wakes the long poll at once.

With ``engine_workers`` unset and several API processes (replicas on one node), each process keeps
running rounds; the bus then only tells the others' long polls that a round committed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from coordinator.api.main import create_app
from coordinator.runtime.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store import make_store
from coordinator.store.bus import Channel, make_bus


def api_app(settings: ServiceSettings, registry: CollectorRegistry | None = None) -> FastAPI:
    """The app of one API process on the settings' (shared) store."""
    app = create_app(settings, make_store(settings), registry or CollectorRegistry())
    attach(app, settings)
    return app


def attach(app: FastAPI, settings: ServiceSettings) -> None:
    """Hand rounds to the engine processes (when there are any) and wire the bus into the app's lifespan."""
    service: CoordinatorService = app.state.service
    service.rounds_here = settings.engine_workers is None
    bus = make_bus(settings)
    if bus is None:
        return
    service.bus = bus
    inner = app.router.lifespan_context

    def on_message(channel: Channel, task_id: str) -> None:
        service.wake(task_id)

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        await bus.start(on_message, ("changed",))
        try:
            async with inner(a) as state:
                yield state
        finally:
            await bus.close()

    app.router.lifespan_context = lifespan
