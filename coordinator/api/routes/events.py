"""``/v1/tasks/{id}/events``: server-sent events, one per round, its forecast, and the final status."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from coordinator.api.deps import READ, ServiceDep, StoreDep
from coordinator.reports import books
from coordinator.store.base import TERMINAL

router = APIRouter(tags=["tasks"])


@router.get(
    "/v1/tasks/{task_id}/events",
    dependencies=READ,
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
    service: ServiceDep,
    store: StoreDep,
    since: Annotated[int, Query(ge=0)] = 0,
    last_event_id: Annotated[
        str | None, Header(description="resume after this round (SSE reconnect)")
    ] = None,
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
                row = json.dumps(books.history_row(entry))
                yield f"event: round\nid: {entry.record.round}\ndata: {row}\n\n"
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
