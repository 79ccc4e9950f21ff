"""Hot-path JSON responses."""

from __future__ import annotations

from fastapi.responses import Response
from pydantic import BaseModel

from coordinator.runtime.wire_json import dump_json


def model_response(model: BaseModel, status_code: int = 200) -> Response:
    """JSON from pydantic-core's serializer: one pass in Rust, no dict detour through ``json.dumps``
    (hot-path routes use it; a response_model would also validate the contract a second time), a lease's
    contract data as the kind rendered it (``wire_json``)."""
    return Response(dump_json(model), status_code=status_code, media_type="application/json")
