"""The FastAPI app: routes under /v1, one place that maps the error tree to responses.

``create_app(settings, store, registry)`` builds everything from its
arguments; nothing is read from the environment or kept in module globals.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi_offline import FastAPIOffline  # /docs and /redoc from packaged assets: no CDN
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from coordinator import errors, ui
from coordinator.api import access, openapi
from coordinator.api.routes import trajectories
from coordinator.reports import books
from coordinator.reports.ledger import Report
from coordinator.runtime import auth
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import (
    CreateTask,
    ErrorBody,
    Health,
    Joined,
    JoinRequest,
    LeaseGrant,
    LeaseRenewed,
    ProposalIn,
    ProposalView,
    RoundsView,
    SolutionView,
    TaskCreated,
    TaskList,
    TaskView,
)
from coordinator.settings import ServiceSettings
from coordinator.store.base import TERMINAL, AgentRecord, Store

log = logging.getLogger("blockopt.api")
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": desc}
    for code, desc in {
        400: "invalid request",
        401: "missing or wrong token",
        403: "forbidden or wrong block",
        404: "unknown task or proposal",
        409: "stale base, expired lease or finished task",
        405: "method not allowed on this route (the Allow header lists the allowed ones)",
        413: "body too large",
        422: "body does not fit the model",
        429: "rate limit, no free block or budget exceeded",
        503: "the service is starting or stopping, or its store does not answer",
    }.items()
}


REPORT_EXAMPLE: dict[str, Any] = {
    "task": {"kind": "my-kind", "name": "my-kind-b16-s0", "blocks": 16},
    "agents": 4,
    "merge_policy": "checked",
    "status": "optimal",
    "rounds": 28,
    "proposals": {"received": 112, "accepted": 112, "rejected": 0, "rejected_by_reason": {}},
    "objective": {
        "initial": 0.0,
        "final": -29.0588,
        "reference": -29.0588,
        "reference_kind": "optimum",
        "relative_gap": 6.6e-11,
    },
    "feasible": True,
    "wall_s": 2.4,
    "usage": {"tokens": 0, "calls": 112},
    "status_reason": "stopping rule met (relative gap)",
    "constants": {
        "kappa": 0.158,
        "gamma_min": 0.87,
        "gamma_max": 1.13,
        "delta_max": 0.0,
        "rate": 0.86,
        "floor": 0.0,
        "informative": True,
        "steps": 28,
    },
    "checks": {
        "a_priori": {
            "constants": {"mu": 0.31, "lambda": 1.52, "m": 16.0},
            "rounds_checked": 7,
            "rounds_held": 7,
            "rounds_precondition_failed": 21,
        },
        "one_step": {"coverage_target": 0.9, "rounds": 18, "hits": 17, "tightness_median": 1.4},
        "envelope": {
            "window": 3,
            "rounds": 25,
            "hits": 25,
            "tightness_median": 40.0,
            "eta_rounds_predicted": 61,
            "eta_rounds_actual": 21,
        },
    },
    "forecast": {
        "limit": -29.0588,
        "remaining": 1e-9,
        "eta_rounds": 0,
        "eta_seconds": 0.0,
        "gain_per_1k_tokens": None,
    },
    "history": [
        {
            "round": 0,
            "objective": -12.3,
            "gap": 16.7,
            "merged": 4,
            "interfering": 6,
            "kappa": 0.2,
            "gamma": 0.98,
            "delta": 0.0,
            "predicted_gap": None,
            "hit": None,
            "a_priori_rhs": None,
            "a_priori_held": None,
        }
    ],
}


def model_response(model: BaseModel, status_code: int = 200) -> Response:
    """JSON from pydantic-core's serializer: one pass in Rust, no dict detour through ``json.dumps``
    (hot-path routes use it; a response_model would also validate the contract a second time)."""
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


def error_response(exc: errors.BlockoptError) -> JSONResponse:
    """The one mapping from the error tree to an HTTP response."""
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers())


class BodyLimit:
    """413 for bodies over the limit, by Content-Length or by counting a streamed body."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = errors.PayloadTooLarge(f"request body exceeds {self.limit} bytes", limit=self.limit)
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await error_response(too_large)(scope, receive, send)
                return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise too_large
            return message

        await self.app(scope, counted, send)


def create_app(settings: ServiceSettings, store: Store, registry: CollectorRegistry | None = None) -> FastAPI:
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
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)  # type: ignore[arg-type]

    # -- the one error mapping -----------------------------------------------------
    @app.exception_handler(errors.BlockoptError)
    async def _blockopt_error(_: Request, exc: errors.BlockoptError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]  # never echo the input: it may hold anything
        first = details[0] if details else {"loc": [], "msg": "invalid"}
        where = ".".join(first["loc"]) or "body"
        return error_response(errors.ValidationFailed(f"{where}: {first['msg']}", errors=details[:10]))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc.__cause__, errors.BlockoptError):  # raised while FastAPI read the body (413)
            return error_response(exc.__cause__)
        if exc.status_code == 404:
            return error_response(errors.NotFound("no such route"))
        if exc.status_code == 405:
            allowed = openapi.allowed_methods(app, request.scope)
            response = error_response(
                errors.MethodNotAllowed("method not allowed on this route", allowed=allowed)
            )
            response.headers["Allow"] = ", ".join(allowed)
            return response
        if exc.status_code == 400:  # e.g. a body that is not JSON
            return error_response(errors.InvalidRequest(f"bad request: {exc.detail}"))
        err = errors.BlockoptError(str(exc.detail))
        return JSONResponse(
            {"error": {"code": "http_error", "message": err.message}}, status_code=exc.status_code
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled %s", type(exc).__name__, exc_info=exc)
        return error_response(errors.BlockoptError("internal error; see the coordinator's log"))

    # -- dependencies -------------------------------------------------------------------
    def admin(authorization: str | None = Header(None, include_in_schema=False)) -> None:
        auth.check_admin(settings.admin_token, authorization)

    async def reader(request: Request) -> None:
        await access.check_read(
            service, settings, request.path_params.get("task_id"), request.headers.get("authorization")
        )

    read = [Depends(reader)]

    async def agent(request: Request) -> AgentRecord:
        # read from the request directly: this runs on every agent call, and FastAPI's per-parameter
        # resolution (a header and a second task_id) cost more than the lookup (the header is undocumented)
        return await service.authenticate(
            request.path_params["task_id"], request.headers.get("authorization")
        )

    wait_q = Query(0.0, ge=0, description="seconds to wait for the verdict (long poll)")
    next_q = Query(False, description="with the verdict, also lease the agent's next block (`next_lease`)")

    # -- tasks ----------------------------------------------------------------------------
    @app.post(
        "/v1/tasks",
        status_code=201,
        response_model=TaskCreated,
        dependencies=[Depends(admin)],
        tags=["tasks"],
        summary="Create a task (admin)",
    )
    async def create_task(body: CreateTask) -> TaskCreated:
        spec, join_token, read_token = await service.create(body)
        return TaskCreated(id=spec.id, join_token=join_token, read_token=read_token)

    @app.get(
        "/v1/tasks", response_model=TaskList, dependencies=read, tags=["tasks"], summary="List tasks (admin)"
    )
    async def list_tasks() -> TaskList:
        return TaskList(tasks=await service.views())

    @app.get(
        "/v1/tasks/{task_id}",
        response_model=TaskView,
        dependencies=read,
        tags=["tasks"],
        summary="A task's status",
    )
    async def get_task(task_id: str) -> TaskView:
        return await service.view(task_id)

    @app.post(
        "/v1/tasks/{task_id}/stop",
        response_model=TaskView,
        dependencies=[Depends(admin)],
        tags=["tasks"],
        summary="Stop a task (admin)",
    )
    async def stop_task(task_id: str) -> TaskView:
        return await service.stop(task_id)

    @app.get(
        "/v1/tasks/{task_id}/rounds",
        response_model=RoundsView,
        dependencies=read,
        tags=["tasks"],
        summary="Per-round history with the bound's constants",
    )
    async def get_rounds(task_id: str, since: int = Query(0, ge=0)) -> RoundsView:
        await store.get_task(task_id)
        return RoundsView(
            task=task_id, rounds=[books.history_row(e) for e in await store.rounds(task_id, since)]
        )

    @app.get(
        "/v1/tasks/{task_id}/report",
        response_model=Report,
        dependencies=read,
        tags=["tasks"],
        summary="The run report (DESIGN §10)",
        responses={200: {"content": {"application/json": {"example": REPORT_EXAMPLE}}}},
    )
    async def get_report(task_id: str) -> Report:
        return await service.report(task_id)

    @app.get(
        "/v1/tasks/{task_id}/solution",
        response_model=SolutionView,
        dependencies=read,
        tags=["tasks"],
        summary="The current solution",
    )
    async def get_solution(task_id: str) -> SolutionView:
        return SolutionView(**await service.solution(task_id))

    @app.get(
        "/v1/tasks/{task_id}/events",
        dependencies=read,
        tags=["tasks"],
        summary="Server-sent events: rounds and status",
        response_class=StreamingResponse,
        responses={
            200: {
                "content": {
                    "text/event-stream": {
                        "example": 'event: round\nid: 0\ndata: {"round": 0, "objective": -20.1, "gap": 8.9}\n\n'
                    }
                }
            }
        },
    )
    async def events(
        task_id: str,
        request: Request,
        since: int = Query(0, ge=0),
        last_event_id: str | None = Header(None, description="resume after this round (SSE reconnect)"),
    ) -> StreamingResponse:
        await store.get_task(task_id)
        if last_event_id is not None and last_event_id.strip().isdigit():  # ids are round numbers
            since = max(since, int(last_event_id) + 1)

        async def stream() -> AsyncIterator[str]:
            seen = since
            while True:
                changed = service.changed(task_id)
                for entry in await store.rounds(task_id, seen):
                    seen += 1
                    yield f"event: round\nid: {entry.record.round}\ndata: {json.dumps(books.history_row(entry))}\n\n"
                    if entry.record.round + 1 >= (await store.get_runtime(task_id)).round:  # after the newest
                        forecast = (await service.forecast(task_id)).model_dump_json()
                        yield f"event: forecast\nid: {entry.record.round}\ndata: {forecast}\n\n"
                runtime = await store.get_runtime(task_id)
                if runtime.status in TERMINAL:
                    data = json.dumps(
                        {"status": runtime.status, "reason": runtime.reason, "round": runtime.round}
                    )
                    yield f"event: status\ndata: {data}\n\n"
                    return
                if await request.is_disconnected():
                    return
                try:
                    await asyncio.wait_for(changed.wait(), timeout=10.0)
                except TimeoutError:
                    yield ": keep-alive\n\n"

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # -- agents -----------------------------------------------------------------------------
    @app.post(
        "/v1/tasks/{task_id}/agents",
        status_code=201,
        response_model=Joined,
        tags=["agents"],
        summary="Join a task with its join token; returns this agent's own token",
    )
    async def join(
        task_id: str, body: JoinRequest, authorization: str | None = Header(None, include_in_schema=False)
    ) -> Joined:
        return await service.join(task_id, auth.bearer(authorization), body)

    @app.post(
        "/v1/tasks/{task_id}/leases",
        status_code=201,
        response_model=None,
        tags=["agents"],
        summary="Lease a block: block, base version, contract, expiry, budget left",
        responses={201: {"model": LeaseGrant, "description": "the lease and its contract"}},
    )
    async def lease(task_id: str, me: AgentRecord = Depends(agent)) -> Response:
        return model_response(await service.lease(task_id, me), 201)

    @app.post(
        "/v1/tasks/{task_id}/leases/{lease_id}/renew",
        response_model=LeaseRenewed,
        tags=["agents"],
        summary="Extend a lease by the lease TTL",
    )
    async def renew(task_id: str, lease_id: str, me: AgentRecord = Depends(agent)) -> LeaseRenewed:
        lease = await service.renew(task_id, me, lease_id)
        return LeaseRenewed(lease_id=lease.id, block=lease.block, expires_at=lease.expires_at)

    @app.delete(
        "/v1/tasks/{task_id}/leases/{lease_id}",
        status_code=204,
        tags=["agents"],
        summary="Release a lease (the block becomes free)",
        response_class=Response,
    )
    async def release(task_id: str, lease_id: str, me: AgentRecord = Depends(agent)) -> Response:
        await service.release(task_id, me, lease_id)
        return Response(status_code=204)

    @app.post(
        "/v1/tasks/{task_id}/proposals",
        response_model=ProposalView,
        tags=["agents"],
        summary="Submit a proposal for the leased block: 200 with the verdict, or 202 to poll",
        responses={202: {"model": ProposalView, "description": "stored; the round has not closed yet"}},
    )
    async def submit(
        task_id: str,
        body: ProposalIn,
        me: AgentRecord = Depends(agent),
        wait: float = wait_q,
        next_lease: bool = next_q,
    ) -> Response:
        view, decided = await service.submit(task_id, me, body, wait, next_lease)
        return model_response(view, 200 if decided else 202)

    @app.get(
        "/v1/tasks/{task_id}/proposals/{proposal_id}",
        response_model=ProposalView,
        tags=["agents"],
        summary="A proposal's verdict (long-poll with ?wait=)",
        responses={202: {"model": ProposalView, "description": "still pending"}},
    )
    async def get_proposal(
        task_id: str,
        proposal_id: str,
        me: AgentRecord = Depends(agent),
        wait: float = wait_q,
        next_lease: bool = next_q,
    ) -> Response:
        view, decided = await service.proposal(task_id, proposal_id, wait, me, next_lease)
        return model_response(view, 200 if decided else 202)

    # -- operations ---------------------------------------------------------------------------
    @app.get(
        "/metrics",
        tags=["operations"],
        summary="Prometheus metrics",
        response_class=Response,
        responses={200: {"content": {"text/plain": {"example": 'blockopt_gap{task="t-3f2a9c"} 1.2e-09\n'}}}},
    )
    async def prometheus(request: Request) -> Response:
        access.check_metrics(settings, request.headers.get("authorization"))
        await metrics.refresh(store, service.clock())
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz", response_model=Health, tags=["operations"], summary="Liveness")
    async def healthz() -> Health:
        return Health(status="ok")

    @app.get(
        "/readyz",
        response_model=Health,
        tags=["operations"],
        summary="Readiness: scheduler up, store reachable",
    )
    async def readyz() -> Health:
        if not service.ready:
            raise errors.NotReady("the service is starting or stopping")
        try:
            ok = await store.ping()
        except Exception:
            ok = False
        if not ok:
            raise errors.Unavailable("the store does not answer")
        return Health(status="ready")

    app.include_router(trajectories.trajectories_router(service, store), dependencies=read)
    ui.install(app, service, store, settings)
    openapi.install_schema(app, settings.kinds)
    return app
