"""``/v1/tasks/{id}/agents``: join a task with its join token; the answer holds this agent's own token."""

from __future__ import annotations

from fastapi import APIRouter, Request

from coordinator.api.deps import ServiceDep
from coordinator.runtime import auth
from coordinator.runtime.wire import Joined, JoinRequest

router = APIRouter(tags=["agents"])


@router.post(
    "/v1/tasks/{task_id}/agents",
    status_code=201,
    response_model=Joined,
    summary="Join a task with its join token; returns this agent's own token",
)
async def join(task_id: str, body: JoinRequest, request: Request, service: ServiceDep) -> Joined:
    return await service.join(task_id, auth.bearer(request.headers.get("authorization")), body)
