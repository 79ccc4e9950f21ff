"""The one mapping from the error tree (``coordinator/errors.py``) to HTTP responses, and the body limit."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from coordinator import errors
from coordinator.api import openapi
from coordinator.runtime.wire import ErrorBody

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
        409: "stale base, expired lease, finished task, or a version older than the coordinator keeps",
        405: "method not allowed on this route (the Allow header lists the allowed ones)",
        413: "body too large",
        422: "body does not fit the model",
        429: "rate limit, no free block, budget exceeded, or the task is still preparing (retry_after)",
        503: "the service is starting or stopping, or its store does not answer",
    }.items()
}


def error_response(exc: errors.BlockoptError) -> JSONResponse:
    """The one mapping from the error tree to an HTTP response."""
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers())


def internal_error(exc: Exception) -> JSONResponse:
    """An unexpected exception: logged with its traceback, answered 500 without its text."""
    log.error("unhandled %s", type(exc).__name__, exc_info=exc)
    return error_response(errors.BlockoptError("internal error; see the coordinator's log"))


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


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as ``{"error": {"code", "message", ...}}`` with its status."""

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
        return internal_error(exc)
