"""Checks on a task's params before the kind builds anything from them.

Params come over HTTP from whoever holds the admin token. They must fit the
kind's schema exactly as ``/openapi.json`` documents it (no coercion: ``true``
is not ``1``, ``"3"`` is not ``3``; but ``3.0`` is an integer there, as in
JSON Schema: ``coordinator.json_integers``), and any file path they name must
lie in the coordinator's data directories (``coordinator.runtime.datapaths``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from coordinator import errors
from coordinator.json_integers import whole_numbers
from coordinator.runtime import datapaths
from tasks.registry import first_error


def check(
    kind: str, model: type[BaseModel], params: dict[str, Any], data_dirs: Iterable[Path]
) -> dict[str, Any]:
    """The params with integral floats in integer fields made ints; InvalidRequest (400) naming the
    parameter when they do not pass."""
    params = whole_numbers(model, params)
    datapaths.check_params(model, params, data_dirs)
    try:
        model.model_validate_json(json.dumps(params), strict=True)
    except ValidationError as exc:
        err = first_error(kind, exc)
        raise errors.InvalidRequest(str(err), field=f"params.{err.param}") from None
    except (TypeError, ValueError) as exc:
        raise errors.InvalidRequest(f"params: {exc}", field="params") from None
    return params


def check_knobs(kind: str, model: type[BaseModel], knobs: dict[str, Any]) -> dict[str, Any]:
    """The kind's proposer knobs (``ProposerParams``), as strict as its params, with integral floats in
    integer fields made ints; InvalidRequest (400) naming the knob when they do not pass."""
    knobs = whole_numbers(model, knobs)
    try:
        model.model_validate_json(json.dumps(knobs), strict=True)
    except ValidationError as exc:
        err = first_error(kind, exc)
        raise errors.InvalidRequest(
            f"proposer knobs: {err.param}: {err.reason}", field=f"proposer.knobs.{err.param}"
        ) from None
    except (TypeError, ValueError) as exc:
        raise errors.InvalidRequest(f"proposer knobs: {exc}", field="proposer.knobs") from None
    return knobs
