"""The baseline for the service benchmarks: a trivial FastAPI POST endpoint.

It parses a proposal-shaped JSON body into a pydantic model and answers a
small JSON object: the cost of FastAPI + uvicorn + pydantic with no work.
Run: ``uvicorn benchmarks.lib.trivial_app:app``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI()


class Body(BaseModel):
    lease_id: str
    block: int
    base_version: int
    value: Any
    predicted_improvement: float
    usage: dict[str, Any] = {}


class Answer(BaseModel):
    id: str
    status: str


@app.post("/echo", status_code=202, response_model=Answer)
async def echo(body: Body) -> Answer:
    return Answer(id=body.lease_id, status="pending")
