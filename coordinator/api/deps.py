"""The dependencies routes share, as ``Annotated`` types (the model: FastAPI's full-stack template).

The app factory puts the service, the store, the settings and the metrics on ``app.state``; a route
declares what it needs by type (``service: ServiceDep``, ``me: AgentDep``) and nothing is global.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request
from prometheus_client import CollectorRegistry

from coordinator.api import access
from coordinator.runtime import auth
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store.base import AgentRecord, Store


def _service(request: Request) -> CoordinatorService:
    service: CoordinatorService = request.app.state.service
    return service


def _settings(request: Request) -> ServiceSettings:
    settings: ServiceSettings = request.app.state.settings
    return settings


# The dependencies are ``async def`` although none awaits: FastAPI runs a plain ``def`` dependency in its
# thread pool, a thread hop per request (a third of a polling agent's request CPU; docs/notes/2026-12-01-
# coordinator-layers.md).
async def get_service(request: Request) -> CoordinatorService:
    return _service(request)


async def get_store(request: Request) -> Store:
    return _service(request).store


async def get_settings(request: Request) -> ServiceSettings:
    return _settings(request)


async def get_metrics(request: Request) -> ServiceMetrics:
    metrics: ServiceMetrics = request.app.state.metrics
    return metrics


async def get_registry(request: Request) -> CollectorRegistry:
    registry: CollectorRegistry = request.app.state.registry
    return registry


async def current_agent(request: Request) -> AgentRecord:
    """The agent whose token the request carries (401 otherwise; 429 over its rate limit).

    Read from the request directly: this runs on every agent call, and FastAPI's per-parameter
    resolution (a header and a second task_id) cost more than the lookup (the header is undocumented).
    """
    return await _service(request).authenticate(
        request.path_params["task_id"], request.headers.get("authorization")
    )


async def require_admin(request: Request) -> None:
    auth.check_admin(_settings(request).admin_token, request.headers.get("authorization"))


async def require_read(request: Request) -> None:
    """Who may read a task (``access.check_read``): admin, its read token or one of its agents."""
    await access.check_read(
        _service(request),
        _settings(request),
        request.path_params.get("task_id"),
        request.headers.get("authorization"),
    )


ServiceDep = Annotated[CoordinatorService, Depends(get_service)]
StoreDep = Annotated[Store, Depends(get_store)]
SettingsDep = Annotated[ServiceSettings, Depends(get_settings)]
MetricsDep = Annotated[ServiceMetrics, Depends(get_metrics)]
RegistryDep = Annotated[CollectorRegistry, Depends(get_registry)]
AgentDep = Annotated[AgentRecord, Depends(current_agent)]
WaitQuery = Annotated[float, Query(ge=0, description="seconds to wait for the verdict (long poll)")]
NextLeaseQuery = Annotated[
    bool, Query(description="with the verdict, also lease the agent's next block (`next_lease`)")
]
SinceQuery = Annotated[
    int | None,
    Query(
        ge=0,
        description="the version of the last contract the agent keeps: the lease's contract may be written "
        "against it (the envelope then says `since`; the kind's ContractDeltas), else it is whole",
    ),
]
ADMIN = [Depends(require_admin)]
READ = [Depends(require_read)]
