"""Checks on a task's params before the kind builds anything from them.

Params come over HTTP from whoever holds the admin token. They must fit the
kind's schema exactly as ``/openapi.json`` documents it (no coercion: ``true``
is not ``1``, ``"3"`` is not ``3``), and any file path they name must lie in
the coordinator's data directories (``coordinator.runtime.datapaths``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from coordinator import errors
from coordinator.runtime import datapaths
from tasks.registry import first_error


def check(kind: str, model: type[BaseModel], params: dict[str, Any], data_dirs: Iterable[Path]) -> None:
    """InvalidRequest (400) naming the parameter when the params do not pass."""
    datapaths.check_params(model, params, data_dirs)
    try:
        model.model_validate_json(json.dumps(params), strict=True)
    except ValidationError as exc:
        err = first_error(kind, exc)
        raise errors.InvalidRequest(str(err), field=f"params.{err.param}") from None
    except (TypeError, ValueError) as exc:
        raise errors.InvalidRequest(f"params: {exc}", field="params") from None
