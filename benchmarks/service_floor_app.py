"""The floor for benchmarks/service_floor.py: the smallest endpoint that does what a proposal must.

``POST /proposals`` validates the body with the coordinator's own model (``ProposalIn``), makes one store
write, waits for a verdict that another task or process produces, and answers it. Nothing else: no auth,
no lease, no budget, no round engine (the verdict producer accepts every proposal). Its throughput
bounds what the coordinator's proposal path can reach on this stack (FastAPI + pydantic + uvicorn, and
the same store), whatever is optimized inside it.

``FLOOR_STORE`` picks the layout:
- ``memory``: the write is an ``asyncio.Queue`` put; the verdict comes from another task of this process
  (the in-process memory store's floor);
- ``redis``: the write is one ``XADD`` to a Redis stream; the verdict comes from a producer task in this
  process that reads the stream (``XREAD``) and publishes verdicts (``PUBLISH``), which this process's one
  subscriber hands to the waiting requests (the in-process Redis floor);
- ``redis-split``: the same, with the producer in its own process: ``python benchmarks/service_floor_app.py``
  (the split mode's floor: API process + engine process).

Run: ``FLOOR_STORE=redis uvicorn benchmarks.service_floor_app:app``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from fastapi.responses import Response
from redis.asyncio import Redis

from coordinator.runtime.wire import ProposalIn

STORE = os.environ.get("FLOOR_STORE", "memory")
REDIS = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
PREFIX = os.environ.get("FLOOR_PREFIX", "bench-floor:")
STREAM, CHANNEL = f"{PREFIX}queue", f"{PREFIX}verdicts"
BATCH = 1000


def verdicts_of(raws: list[tuple[str, str]]) -> str:
    """The producer's work: read each proposal back and accept it (one JSON message per batch)."""
    out = []
    for pid, raw in raws:
        p = ProposalIn.model_validate_json(raw)
        out.append([pid, {"proposal_id": pid, "block": p.block, "status": "accepted"}])
    return json.dumps(out)


async def produce_redis(r: Redis) -> None:
    """Read queued proposals from the stream, publish their verdicts, trim what was read."""
    last = "$"
    while True:
        got = await r.xread({STREAM: last}, count=BATCH, block=1000)
        if not got:
            continue
        entries = got[0][1]
        last = entries[-1][0]
        async with r.pipeline(transaction=False) as pipe:
            pipe.publish(CHANNEL, verdicts_of([(f["id"], f["p"]) for _, f in entries]))
            pipe.xdel(STREAM, *[eid for eid, _ in entries])
            await pipe.execute()


class Floor:
    """The waiting requests of this process, and the store they write to."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[str]] = {}
        self.queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.redis: Redis | None = None
        self.tasks: list[asyncio.Task[None]] = []

    def resolve(self, message: str) -> None:
        for pid, verdict in json.loads(message):
            fut = self.waiting.pop(pid, None)
            if fut is not None and not fut.done():
                fut.set_result(json.dumps(verdict))

    async def listen(self, r: Redis) -> None:
        async with r.pubsub() as ps:
            await ps.subscribe(CHANNEL)
            async for message in ps.listen():
                if message["type"] == "message":
                    self.resolve(message["data"])

    async def produce_memory(self) -> None:
        while True:
            batch = [await self.queue.get()]
            while not self.queue.empty() and len(batch) < BATCH:
                batch.append(self.queue.get_nowait())
            self.resolve(verdicts_of(batch))

    async def start(self) -> None:
        if STORE == "memory":
            self.tasks.append(asyncio.create_task(self.produce_memory()))
            return
        self.redis = Redis.from_url(REDIS, decode_responses=True)
        self.tasks.append(asyncio.create_task(self.listen(self.redis)))
        if STORE == "redis":
            self.tasks.append(asyncio.create_task(produce_redis(self.redis)))

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.redis is not None:
            await self.redis.aclose()

    async def submit(self, body: ProposalIn) -> str:
        pid = uuid.uuid4().hex
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.waiting[pid] = fut
        raw = body.model_dump_json()
        if self.redis is None:
            self.queue.put_nowait((pid, raw))
        else:
            await self.redis.xadd(STREAM, {"id": pid, "p": raw})  # the one store write
        try:
            async with asyncio.timeout(5.0):
                return await fut
        finally:
            self.waiting.pop(pid, None)


floor = Floor()


@contextlib.asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    await floor.start()
    try:
        yield
    finally:
        await floor.stop()


app = FastAPI(lifespan=lifespan)


@app.post("/proposals")
async def submit(body: ProposalIn) -> Response:
    return Response(await floor.submit(body), media_type="application/json")


async def _producer_main() -> Any:
    r = Redis.from_url(REDIS, decode_responses=True)
    try:
        await produce_redis(r)
    finally:
        await r.aclose()


if __name__ == "__main__":  # the split layout's engine process
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_producer_main())
