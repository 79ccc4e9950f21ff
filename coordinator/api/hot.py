"""The agents' hot routes, served without FastAPI's router and dependency resolution (a pure ASGI middleware).

A steady agent makes one request per proposal (``POST .../proposals?wait=..&next_lease=true``); profiled
under 64 agents, FastAPI's route matching, dependency solving and parameter validation cost that request
more CPU than the proposal's own work (docs/notes/2026-12-01-scale-curves-and-service-hot-path.md). This
middleware answers the common case of the three agent routes of that loop (submit, poll a verdict, lease),
and of the head feed a search under way asks every few milliseconds (``GET .../changes?since=V``), itself:
the same service calls, the same validation model (``ProposalIn``, on the body ``json.loads`` decoded, as
FastAPI validates it), the same error mapping and response bytes.

Anything unusual is handed to the FastAPI app unchanged (a body already read is replayed), which answers it as
it always has: another content type, a query value that is not a plain number or ``true``/``false``/
``1``/``0``, an encoded query, a ``since`` missing or not plain digits, a body that is empty, not JSON or does
not validate, a body over the limit. The routes stay declared in ``api/routes``, so /docs and the OpenAPI
schema are unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ValidationError

from coordinator import errors
from coordinator.api.http_errors import error_response, internal_error
from coordinator.runtime.proposals import NextLeaseAsk
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import ProposalIn
from coordinator.runtime.wire_json import dump_json

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_PROPOSALS = re.compile(r"/v1/tasks/([^/]+)/proposals(?:/([^/]+))?")
_LEASES = re.compile(r"/v1/tasks/([^/]+)/leases")
_CHANGES = re.compile(r"/v1/tasks/([^/]+)/changes")
_DIGITS = re.compile(rb"[0-9]{1,18}")
_NUMBER = re.compile(rb"[0-9]{1,9}(?:\.[0-9]{1,9})?")
_BOOLS = {b"true": True, b"false": False, b"1": True, b"0": False}
_JSON = (b"application/json",)


def _query(raw: bytes) -> tuple[float, bool, int | None] | None:
    """(wait, next_lease, since) when each is absent or plainly written; None: let FastAPI read them."""
    wait, next_lease, since = 0.0, False, None
    if not raw:
        return wait, next_lease, since
    if b"%" in raw or b"+" in raw:  # encoded names or values: FastAPI decodes them
        return None
    for part in raw.split(b"&"):
        key, _, value = part.partition(b"=")
        if key == b"wait":
            if not _NUMBER.fullmatch(value):
                return None
            wait = float(value)
        elif key == b"next_lease":
            if value not in _BOOLS:
                return None
            next_lease = _BOOLS[value]
        elif key == b"since":
            if since is not None or not _DIGITS.fullmatch(value):
                return None
            since = int(value)
    return wait, next_lease, since  # other names are ignored, as FastAPI ignores them


def _since(raw: bytes) -> int | None:
    """``since`` when it is plainly written (digits, given once); None: let FastAPI read it."""
    if b"%" in raw or b"+" in raw:
        return None
    given = [value for key, _, value in (part.partition(b"=") for part in raw.split(b"&")) if key == b"since"]
    if len(given) != 1 or not _DIGITS.fullmatch(given[0]):
        return None
    return int(given[0])


async def _send_model(send: Send, model: BaseModel, status: int) -> None:
    """What ``api/responses.model_response`` sends, without building a Response object."""
    body = dump_json(model).encode()
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class HotRoutes:
    """Serve submit, poll and lease directly when the request is plain; hand anything else to ``app``."""

    def __init__(self, app: ASGIApp, service: CoordinatorService, limit: int) -> None:
        self.app = app
        self.service = service
        self.limit = limit
        self.served = 0
        """Requests answered here rather than by the app (tests check the plain ones come here)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("root_path"):
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        found = _PROPOSALS.fullmatch(path) if method in ("POST", "GET") else None
        if found is not None and (method == "POST") == (found[2] is None):
            query = _query(scope.get("query_string", b""))
            if query is not None:
                if method == "POST":
                    await self._submit(scope, receive, send, found[1], *query)
                else:
                    await self._answer(scope, receive, send, self._poll(scope, found[1], found[2], *query))
                return
        elif method == "POST" and (leased := _LEASES.fullmatch(path)) is not None:
            raw = scope.get("query_string", b"")
            since = _since(raw) if raw else None
            if not raw or since is not None:
                await self._answer(scope, receive, send, self._lease(scope, leased[1], since))
                return
        elif method == "GET" and (asked := _CHANGES.fullmatch(path)) is not None:
            since = _since(scope.get("query_string", b""))
            if since is not None:
                await self._answer(scope, receive, send, self._changes(scope, asked[1], since))
                return
        await self.app(scope, receive, send)

    async def _submit(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        task_id: str,
        wait: float,
        next_lease: bool,
        since: int | None,
    ) -> None:
        length = _header(scope, b"content-length")
        kind = _header(scope, b"content-type")
        plain = kind is None or kind.split(b";", 1)[0].strip().lower() in _JSON
        if not plain or (length is not None and (not length.isdigit() or int(length) > self.limit)):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more and size <= self.limit:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away: nobody to answer
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        body = _proposal(raw) if not more else None
        if body is None:
            await self.app(scope, _replay(raw, more, receive), send)
            return

        async def submit() -> tuple[BaseModel, int]:
            me = await self.service.authenticate(task_id, _text(scope, b"authorization"))
            ask = NextLeaseAsk(next_lease=next_lease, since=since)
            view, decided = await self.service.submit(task_id, me, body, wait, **ask)
            return view, 200 if decided else 202

        await self._answer(scope, receive, send, submit())

    async def _poll(
        self, scope: Scope, task_id: str, proposal_id: str, wait: float, next_lease: bool, since: int | None
    ) -> tuple[BaseModel, int]:
        me = await self.service.authenticate(task_id, _text(scope, b"authorization"))
        view, decided = await self.service.proposal(task_id, proposal_id, wait, me, next_lease, since)
        return view, 200 if decided else 202

    async def _lease(self, scope: Scope, task_id: str, since: int | None) -> tuple[BaseModel, int]:
        me = await self.service.authenticate(task_id, _text(scope, b"authorization"))
        return await self.service.lease(task_id, me, since), 201

    async def _changes(self, scope: Scope, task_id: str, since: int) -> tuple[BaseModel, int]:
        me = await self.service.authenticate(task_id, _text(scope, b"authorization"))
        return await self.service.changes(task_id, me, since), 200

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, work: Awaitable[tuple[BaseModel, int]]
    ) -> None:
        """The model as JSON, or the error as the FastAPI app's exception handlers would answer it."""
        self.served += 1
        try:
            model, status = await work
        except errors.BlockoptError as exc:
            await error_response(exc)(scope, receive, send)
            return
        except Exception as exc:
            await internal_error(exc)(scope, receive, send)
            return
        await _send_model(send, model, status)


def serve_hot_routes(app: FastAPI, service: CoordinatorService, limit: int) -> None:
    """Put ``HotRoutes`` in front of the app's whole middleware stack, outside Starlette's error middleware
    and FastAPI's body limit and telemetry layers too (each a coroutine frame every await passes through).
    Its answers are complete on their own: errors already mapped, unexpected exceptions answered 500."""
    build = app.build_middleware_stack

    def hot_first() -> ASGIApp:
        return HotRoutes(build(), service, limit)

    app.build_middleware_stack = hot_first  # type: ignore[method-assign]


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _text(scope: Scope, name: bytes) -> str | None:
    value = _header(scope, name)
    return value.decode("latin-1") if value is not None else None


def _proposal(raw: bytes) -> ProposalIn | None:
    """The body as FastAPI would validate it (``json.loads``, then the model); None if it would not."""
    if not raw:
        return None
    try:
        return ProposalIn.model_validate(json.loads(raw))
    except (ValueError, ValidationError):  # (JSONDecodeError and UnicodeDecodeError are ValueErrors)
        return None


def _replay(raw: bytes, more: bool, receive: Receive) -> Receive:
    """``receive`` with the body read so far given back first."""
    first: list[Message] = [{"type": "http.request", "body": raw, "more_body": more}]

    async def replayed() -> Message:
        return first.pop() if first else await receive()

    return replayed
