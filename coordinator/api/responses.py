"""Hot-path JSON responses."""

from __future__ import annotations

from fastapi.responses import Response
from pydantic import BaseModel


def model_response(model: BaseModel, status_code: int = 200) -> Response:
    """JSON from pydantic-core's serializer: one pass in Rust, no dict detour through ``json.dumps``
    (hot-path routes use it; a response_model would also validate the contract a second time)."""
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")
