"""Wire the UI into an app: static files at ``/ui/``, its read routes under ``/v1``, offline API docs."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from coordinator.runtime.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store.base import Store
from coordinator.ui import routes

STATIC = Path(__file__).with_name("static")


def install(app: FastAPI, service: CoordinatorService, store: Store, settings: ServiceSettings) -> None:
    app.include_router(routes.router(service, store, settings))

    @app.get("/ui", include_in_schema=False)
    async def ui_root() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=308)

    app.mount("/ui", StaticFiles(directory=STATIC, html=True), name="ui")
