"""JSON Schema's integers in strict request bodies: ``3.0`` is one, ``true`` and ``"3"`` are not.

Request bodies are validated strictly (no coercion: ``false`` is not ``0``). But the OpenAPI document says
``"type": "integer"``, and in JSON Schema an integer is any number with a zero fractional part, so a client
whose JSON encoder writes ``3.0`` (JavaScript's, numpy's) sends a schema-valid body. Pydantic's strict mode
refuses it; here such a float becomes an int before validation, wherever the model's field is an integer
(nested models, lists and dicts included), and nowhere else (a ``float`` or ``Any`` field keeps its ``3.0``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Union

from pydantic import BaseModel, model_validator


def whole_numbers(model: type[BaseModel], data: Any) -> Any:
    """``data`` (a body for ``model``) with every integral float that fills an integer field made an int."""
    if not isinstance(data, Mapping):
        return data
    out = dict(data)
    for name, info in model.model_fields.items():
        key = info.alias if info.alias is not None and info.alias in out else name
        if key in out:
            out[key] = _fit(info.annotation, out[key])
    return data if _same(out.values(), data.values()) else out


def _same(new: Any, old: Any) -> bool:
    """Nothing was made an int (then the input goes on as it came, lists and all)."""
    return all(a is b for a, b in zip(new, old, strict=True))


def _fit(annotation: Any, value: Any) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _fit(args[0], value)
    if origin in (Union, types.UnionType):
        if isinstance(value, float) and int in args and float not in args:
            return _integral(value)
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        return whole_numbers(models[0], value) if len(models) == 1 else value
    if annotation is int:
        return _integral(value)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return whole_numbers(annotation, value)
    if origin in (list, set, frozenset, Sequence) and len(args) == 1 and isinstance(value, list):
        items = [_fit(args[0], v) for v in value]
    elif origin is tuple and isinstance(value, list):
        each = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
        items = [_fit(a, v) for a, v in zip(each, value, strict=False)] + value[len(each) :]
    elif origin in (dict, Mapping) and len(args) == 2 and isinstance(value, dict):
        fitted = {k: _fit(args[1], v) for k, v in value.items()}
        return value if _same(fitted.values(), value.values()) else fitted
    else:
        return value
    return value if _same(items, value) else items


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class WholeNumbers(BaseModel):
    """Base of strict request-body models: integral floats fill their integer fields (see module doc)."""

    @model_validator(mode="before")
    @classmethod
    def _whole_numbers(cls, data: Any) -> Any:
        return whole_numbers(cls, data)
