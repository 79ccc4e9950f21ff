"""Trajectory export and abandoned-lease reports: what users need to tune one prompt across models.

``GET /v1/tasks/{id}/trajectories`` streams JSON Lines, one per proposal and
one per abandoned lease (arrival order): agent, model, prompt and response
sizes, verdict and reason, Δ̂ (predicted), Δ (measured), δ = |Δ̂ − Δ| and the
usage. Failures are the interesting lines, so leases that ended without a
proposal are reported too: ``POST /v1/tasks/{id}/leases/{lease_id}/abandon``
records what such a lease cost (its tokens count in the task's usage and
budgets, an LLM that spent them and then failed still spent them) and
releases the lease; with ``?next_lease=true`` its reply carries the agent's
next lease, as a verdict does. The lines themselves are built in
``reports/trajectories.py``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from coordinator.api.deps import AgentDep, ServiceDep, SinceQuery, StoreDep
from coordinator.api.responses import model_response
from coordinator.engine.records import Usage
from coordinator.json_integers import WholeNumbers
from coordinator.reports.trajectories import abandoned_line, proposal_line
from coordinator.runtime.wire import LeaseGrant
from coordinator.store.base import AbandonedLease

MEDIA_TYPE = "application/x-ndjson"


class AbandonIn(WholeNumbers):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "id": "d00d01",
                    "block": 3,
                    "base_version": 12,
                    "outcome": "failed",
                    "failure": "malformed_json",
                    "reason": "could not read a JSON object from your reply",
                    "usage": {
                        "prompt_tokens": 1200,
                        "completion_tokens": 410,
                        "calls": 2,
                        "model": "openai/gpt-oss-120b",
                    },
                }
            ]
        },
    )
    id: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        pattern=r"^[\w\-]+$",
        description="client-chosen id: re-sending it is idempotent (usage counted once)",
    )
    block: int = Field(..., ge=0)
    base_version: int = Field(..., ge=0)
    outcome: Literal["declined", "failed"] = "failed"
    failure: str | None = Field(None, max_length=64)
    reason: str | None = Field(None, max_length=2000)
    usage: Usage = Field(default_factory=Usage)


class AbandonOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"id": "d00d01", "recorded": True, "next_lease": None}]}
    )
    id: str
    recorded: bool
    """False when this id was already recorded (a retried report)."""
    next_lease: LeaseGrant | None = Field(
        None,
        description="with ?next_lease=true: the agent's next lease, so an agent whose search found nothing "
        "leases again in the same request (null: lease with POST /leases, which says why)",
    )


router = APIRouter(tags=["trajectories"])


@router.post(
    "/v1/tasks/{task_id}/leases/{lease_id}/abandon",
    response_model=None,
    tags=["agents"],
    summary="End a lease without a proposal, reporting what it cost (counted in usage and budgets)",
    responses={200: {"model": AbandonOut, "description": "the report's receipt (and the next lease)"}},
)
async def abandon(
    task_id: str,
    lease_id: str,
    body: AbandonIn,
    me: AgentDep,
    service: ServiceDep,
    next_lease: bool = Query(False, description="also lease the agent's next block (in ``next_lease``)"),
    since: SinceQuery = None,
) -> Response:
    record = AbandonedLease(
        id=body.id or uuid.uuid4().hex,
        agent=me.id,
        block=body.block,
        base_version=body.base_version,
        outcome=body.outcome,
        failure=body.failure,
        reason=body.reason,
        usage=body.usage,
        at=service.clock(),
    )
    created = await service.abandon(task_id, me, lease_id, record)
    grant = await service.next_lease(task_id, me, since) if next_lease else None
    return model_response(AbandonOut(id=record.id, recorded=created, next_lease=grant))


@router.get(
    "/v1/tasks/{task_id}/trajectories",
    response_class=StreamingResponse,
    summary="JSON Lines, one per proposal or abandoned lease: sizes, verdict, Δ̂, Δ, δ, usage",
    responses={
        200: {
            "content": {
                MEDIA_TYPE: {
                    "example": json.dumps(
                        {
                            "type": "proposal",
                            "id": "c0ffee01",
                            "agent": "a-91c2",
                            "agent_name": "gpt-oss-0",
                            "model": "openai/gpt-oss-120b",
                            "block": 3,
                            "base_version": 12,
                            "at": 1764478810.2,
                            "prompt_tokens": 1180,
                            "response_tokens": 402,
                            "reasoning_tokens": 190,
                            "prompt_chars": 3900,
                            "response_chars": 610,
                            "verdict": "accepted",
                            "code": "merged",
                            "reason": "merged",
                            "round": 12,
                            "predicted": 0.042,
                            "delta": 0.041,
                            "error": 0.001,
                            "usage": {"calls": 1},
                        }
                    )
                }
            }
        }
    },
)
async def trajectories(task_id: str, store: StoreDep) -> StreamingResponse:
    await store.get_task(task_id)  # 404 before the stream starts
    proposals = await store.proposal_log(task_id)
    abandoned = await store.abandoned(task_id)
    names = {a.id: a.name for a in await store.list_agents(task_id)}
    lines = [(q.received_at, proposal_line(q, v, names)) for q, v in proposals]
    lines += [(a.at, abandoned_line(a, names)) for a in abandoned]
    lines.sort(key=lambda item: item[0])

    async def stream() -> AsyncIterator[str]:
        for _, line in lines:
            yield json.dumps(line, separators=(",", ":")) + "\n"

    return StreamingResponse(stream(), media_type=MEDIA_TYPE)
