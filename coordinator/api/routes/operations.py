"""Operations: Prometheus metrics, liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from coordinator import errors
from coordinator.api import access
from coordinator.api.deps import MetricsDep, RegistryDep, ServiceDep, SettingsDep
from coordinator.runtime.wire import Health

router = APIRouter(tags=["operations"])


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"example": 'blockopt_gap{task="t-3f2a9c"} 1.2e-09\n'}}}},
)
async def prometheus(
    request: Request, service: ServiceDep, settings: SettingsDep, metrics: MetricsDep, registry: RegistryDep
) -> Response:
    access.check_metrics(settings, request.headers.get("authorization"))
    await metrics.refresh(service.store, service.clock())
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz", response_model=Health, summary="Liveness")
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Health, summary="Readiness: scheduler up, store reachable")
async def readyz(service: ServiceDep) -> Health:
    if not service.ready:
        raise errors.NotReady("the service is starting or stopping")
    try:
        ok = await service.store.ping()
    except Exception:
        ok = False
    if not ok:
        raise errors.Unavailable("the store does not answer")
    return Health(status="ready")
