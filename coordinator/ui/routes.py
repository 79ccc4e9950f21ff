"""The read routes the web UI needs beyond tasks and rounds: agents with their leases and verdicts, and a
kind's own view (a JSON model plus the kind's browser module). Public ``/v1`` routes like any other."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field

from coordinator import errors
from coordinator.api import access
from coordinator.runtime.service import CoordinatorService
from coordinator.settings import ServiceSettings
from coordinator.store.base import Store
from tasks import capabilities
from tasks.registry import UnknownKind, kind_class


class LeaseHeld(BaseModel):
    block: int
    version: int
    granted_at: float
    expires_at: float
    age: float = Field(description="seconds since the lease was granted")


class LastVerdict(BaseModel):
    block: int
    status: str
    code: str
    reason: str
    round: int | None


class AgentActivity(BaseModel):
    id: str
    name: str
    proposer: str
    model: str
    joined_at: float
    leases: list[LeaseHeld]
    proposals: int
    accepted: int
    rejected: int
    abandoned: int
    last_verdict: LastVerdict | None
    tokens: float
    calls: float


class AgentsView(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "task": "t-3f2a9c",
                    "now": 1764478812.0,
                    "agents": [
                        {
                            "id": "a-91c2",
                            "name": "worker-1",
                            "proposer": "heuristic",
                            "model": "heuristic",
                            "joined_at": 1764478800.0,
                            "leases": [
                                {
                                    "block": 3,
                                    "version": 12,
                                    "granted_at": 1764478810.0,
                                    "expires_at": 1764478820.0,
                                    "age": 2.0,
                                }
                            ],
                            "proposals": 12,
                            "accepted": 9,
                            "rejected": 3,
                            "abandoned": 1,
                            "last_verdict": {
                                "block": 2,
                                "status": "rejected",
                                "code": "stale_base",
                                "reason": "block 2 changed at version 11",
                                "round": 11,
                            },
                            "tokens": 0,
                            "calls": 13,
                        }
                    ],
                    "rejected_by_round": {"11": {"stale_base": 1}},
                }
            ]
        }
    }
    task: str
    now: float
    agents: list[AgentActivity]
    rejected_by_round: dict[str, dict[str, int]] = Field(
        description="round -> rejection code -> proposals rejected in that round"
    )


class KindView(BaseModel):
    model_config = {
        "json_schema_extra": {
            "examples": [
                {
                    "task": "t-3f2a9c",
                    "kind": "my-kind",
                    "version": 40,
                    "renderer": "/v1/kinds/my-kind/view.js",
                    "model": {"residuals": [0.01, 0.002]},
                }
            ]
        }
    }
    task: str
    kind: str
    version: int
    renderer: str | None = Field(
        description="URL of the kind's ES module (exports mount(element)); null: none"
    )
    model: Any = Field(description="the kind's JSON view model (null when the kind has no panel)")


def router(service: CoordinatorService, store: Store, settings: ServiceSettings) -> APIRouter:
    api = APIRouter(tags=["tasks"])
    cached: dict[str, tuple[int, Any]] = {}
    """task id -> (version, view model): a poll at an unchanged head costs nothing."""

    async def read_access(request: Request) -> None:
        """Who may read agents and views: the same rule as every task read (admin, read or agent token)."""
        await access.check_read(
            service, settings, request.path_params.get("task_id"), request.headers.get("authorization")
        )

    @api.get(
        "/v1/tasks/{task_id}/agents",
        response_model=AgentsView,
        dependencies=[Depends(read_access)],
        summary="Agents of a task: leases held (block, age), proposals, last verdict, tokens and calls",
    )
    async def list_agents(task_id: str) -> AgentsView:
        await service.spec(task_id)
        now = service.clock()
        agents = await store.list_agents(task_id)
        leases = await store.active_leases(task_id, now)
        log = await store.proposal_log(task_id)
        abandoned = Counter(a.agent for a in await store.abandoned(task_id))
        usage: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for row in await store.usage(task_id):
            usage[row.agent][0] += row.usage.tokens
            usage[row.agent][1] += row.usage.calls
        held: dict[str, list[LeaseHeld]] = defaultdict(list)
        for lease in leases:
            held[lease.agent].append(
                LeaseHeld(
                    block=lease.block,
                    version=lease.version,
                    granted_at=lease.granted_at,
                    expires_at=lease.expires_at,
                    age=max(0.0, now - lease.granted_at),
                )
            )
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        last: dict[str, LastVerdict] = {}
        rejected: dict[str, Counter[str]] = defaultdict(Counter)
        for queued, verdict in log:
            agent = queued.proposal.agent
            counts[agent]["proposals"] += 1
            if verdict is None:
                continue
            counts[agent][verdict.status] += 1
            last[agent] = LastVerdict(
                block=verdict.block,
                status=verdict.status,
                code=verdict.code,
                reason=verdict.reason,
                round=verdict.round,
            )
            if verdict.status == "rejected":
                rejected[str(verdict.round)][verdict.code] += 1
        return AgentsView(
            task=task_id,
            now=now,
            agents=[
                AgentActivity(
                    id=a.id,
                    name=a.name,
                    proposer=a.proposer,
                    model=a.model,
                    joined_at=a.joined_at,
                    leases=sorted(held.get(a.id, []), key=lambda lease: lease.block),
                    proposals=counts[a.id]["proposals"],
                    accepted=counts[a.id]["accepted"],
                    rejected=counts[a.id]["rejected"],
                    abandoned=abandoned[a.id],
                    last_verdict=last.get(a.id),
                    tokens=usage[a.id][0] if a.id in usage else 0.0,
                    calls=usage[a.id][1] if a.id in usage else 0.0,
                )
                for a in agents
            ],
            rejected_by_round={k: dict(v) for k, v in rejected.items()},
        )

    @api.get(
        "/v1/tasks/{task_id}/view",
        response_model=KindView,
        dependencies=[Depends(read_access)],
        summary="The kind's own view of the current solution (JSON model + URL of its renderer module)",
    )
    async def kind_view(task_id: str) -> KindView:
        task, state, version = await service.current(task_id)
        hit = cached.get(task_id)
        if hit is not None and hit[0] == version:
            model = hit[1]
        else:
            model = await asyncio.to_thread(capabilities.view_model, task, state)
            if len(cached) >= 256:
                cached.clear()
            cached[task_id] = (version, model)
        renderer = (
            f"/v1/kinds/{task.kind}/view.js" if capabilities.view_renderer(type(task)) is not None else None
        )
        return KindView(task=task_id, kind=task.kind, version=version, renderer=renderer, model=model)

    @api.get(
        "/v1/kinds/{kind}/view.js",
        tags=["kinds"],
        response_class=FileResponse,
        summary="A kind's browser module for its panel (public: a module import sends no token)",
        responses={200: {"content": {"text/javascript": {"example": "export function mount(el) {...}"}}}},
    )
    async def kind_renderer(kind: str) -> FileResponse:
        try:
            path = capabilities.view_renderer(kind_class(kind))
        except UnknownKind as exc:
            raise errors.NotFound(str(exc)) from None
        if path is None or not path.is_file():
            raise errors.NotFound(f"kind '{kind}' ships no view module")
        return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    return api
