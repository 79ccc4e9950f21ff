"""``/v1/tasks/{id}/proposals``: submit one for the leased block; read (long-poll) its verdict."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from coordinator.api.deps import AgentDep, NextLeaseQuery, ServiceDep, SinceQuery, WaitQuery
from coordinator.api.responses import model_response
from coordinator.runtime.wire import ProposalIn, ProposalView

router = APIRouter(prefix="/v1/tasks/{task_id}/proposals", tags=["agents"])


@router.post(
    "",
    response_model=ProposalView,
    summary="Submit a proposal for the leased block: 200 with the verdict, or 202 to poll",
    responses={202: {"model": ProposalView, "description": "stored; the round has not closed yet"}},
)
async def submit(
    task_id: str,
    body: ProposalIn,
    me: AgentDep,
    service: ServiceDep,
    wait: WaitQuery = 0.0,
    next_lease: NextLeaseQuery = False,
    since: SinceQuery = None,
) -> Response:
    view, decided = await service.submit(task_id, me, body, wait, next_lease=next_lease, since=since)
    return model_response(view, 200 if decided else 202)


@router.get(
    "/{proposal_id}",
    response_model=ProposalView,
    summary="A proposal's verdict (long-poll with ?wait=)",
    responses={202: {"model": ProposalView, "description": "still pending"}},
)
async def get_proposal(
    task_id: str,
    proposal_id: str,
    me: AgentDep,
    service: ServiceDep,
    wait: WaitQuery = 0.0,
    next_lease: NextLeaseQuery = False,
    since: SinceQuery = None,
) -> Response:
    view, decided = await service.proposal(task_id, proposal_id, wait, me, next_lease, since)
    return model_response(view, 200 if decided else 202)
