"""``/v1/tasks/{id}/leases``: lease a block with its contract, renew it, release it;
``/v1/tasks/{id}/changes``: what merged since the head a search is on (agent token)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from coordinator.api.deps import AgentDep, ServiceDep, SinceQuery
from coordinator.api.responses import model_response
from coordinator.runtime.wire import HeadChangesView, LeaseGrant, LeaseRenewed

router = APIRouter(prefix="/v1/tasks/{task_id}/leases", tags=["agents"])
changes_router = APIRouter(prefix="/v1/tasks/{task_id}/changes", tags=["agents"])


@changes_router.get(
    "",
    response_model=HeadChangesView,
    summary="What merged since version since: the kind's changes for a search under way",
)
async def changes(
    task_id: str, me: AgentDep, service: ServiceDep, since: Annotated[int, Query(ge=0)]
) -> HeadChangesView:
    return await service.changes(task_id, me, since)


@router.post(
    "",
    status_code=201,
    response_model=None,
    summary="Lease a block: block, base version, contract, expiry, budget left",
    responses={201: {"model": LeaseGrant, "description": "the lease and its contract"}},
)
async def lease(task_id: str, me: AgentDep, service: ServiceDep, since: SinceQuery = None) -> Response:
    return model_response(await service.lease(task_id, me, since), 201)


@router.post("/{lease_id}/renew", response_model=LeaseRenewed, summary="Extend a lease by the lease TTL")
async def renew(task_id: str, lease_id: str, me: AgentDep, service: ServiceDep) -> LeaseRenewed:
    lease = await service.renew(task_id, me, lease_id)
    return LeaseRenewed(lease_id=lease.id, block=lease.block, expires_at=lease.expires_at)


@router.delete(
    "/{lease_id}",
    status_code=204,
    summary="Release a lease (the block becomes free)",
    response_class=Response,
)
async def release(task_id: str, lease_id: str, me: AgentDep, service: ServiceDep) -> Response:
    await service.release(task_id, me, lease_id)
    return Response(status_code=204)
