"""The app factory: middleware, the error mapping, and the routers under /v1 (one per resource).

``create_app(settings, store, registry)`` builds everything from its arguments and puts the service,
store, settings and metrics on ``app.state``, where the shared dependencies (``api/deps.py``) find
them; nothing is read from the environment or kept in module globals.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline  # /docs and /redoc from packaged assets: no CDN
from prometheus_client import CollectorRegistry

from coordinator import ui
from coordinator.api import hot, openapi
from coordinator.api.deps import READ
from coordinator.api.http_errors import ERROR_RESPONSES, BodyLimit, install_error_handlers
from coordinator.api.routes import agents, events, leases, operations, proposals, tasks, trajectories
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store.base import Store


def create_app(
    settings: ServiceSettings,
    store: Store,
    registry: CollectorRegistry | None = None,
    hot_routes: bool = True,
) -> FastAPI:
    """``hot_routes=False``: every request through FastAPI (tests compare the two; api/hot.py)."""
    registry = registry if registry is not None else CollectorRegistry()
    metrics = ServiceMetrics(registry, settings.metrics_max_tasks, settings.metrics_max_agents)
    service = CoordinatorService(settings, store, metrics)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await service.start()
        try:
            yield
        finally:
            await service.close()

    app = FastAPIOffline(
        title="blockopt coordinator",
        version="1",
        description="Coordinates a team of optimization agents: leases blocks, scores and merges proposals, "
        "records the measured constants of the convergence bound. Errors are always "
        '`{"error": {"code", "message", ...}}`.',
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
    )
    app.state.service = service
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.registry = registry
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    if hot_routes:
        hot.serve_hot_routes(app, service, settings.max_body_bytes)
    install_error_handlers(app)
    for resource in (tasks, events, agents, leases, proposals, operations):
        app.include_router(resource.router)
    app.include_router(leases.changes_router)
    app.include_router(trajectories.router, dependencies=READ)
    ui.install(app, service, store, settings)
    openapi.install_schema(app, settings.kinds)
    return app
