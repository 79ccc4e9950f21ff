"""Discovers the kinds in this package, so adding one needs no registration code."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from pydantic import ValidationError

import tasks
from tasks.base import Task

_NOT_KINDS = {"base", "registry"}


class UnknownKind(LookupError):
    pass


class InvalidParams(ValueError):
    """Task parameters that do not fit the kind's ``Params`` model; names the parameter."""

    def __init__(self, kind: str, param: str, reason: str) -> None:
        super().__init__(f"{kind}: parameter '{param}': {reason}")
        self.kind = kind
        self.param = param
        self.reason = reason


@cache
def kinds() -> dict[str, type[Task[Any]]]:
    found: dict[str, type[Task[Any]]] = {}
    for info in pkgutil.iter_modules(tasks.__path__):
        if info.name in _NOT_KINDS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"tasks.{info.name}")
        cls = getattr(module, "TASK", None)
        if cls is not None:
            found[cls.kind] = cls
    return found


def kind_class(kind: str) -> type[Task[Any]]:
    try:
        return kinds()[kind]
    except KeyError:
        raise UnknownKind(f"unknown task kind '{kind}' (known: {', '.join(sorted(kinds()))})") from None


def first_error(kind: str, exc: ValidationError) -> InvalidParams:
    err = exc.errors()[0]
    param = ".".join(str(p) for p in err.get("loc", ())) or "params"
    return InvalidParams(kind, param, err.get("msg", "invalid"))


def create_task(kind: str, params: dict[str, Any]) -> Task[Any]:
    """Build a task from plain parameters; raises UnknownKind or InvalidParams."""
    cls = kind_class(kind)
    try:
        model = cls.Params.model_validate(params)
    except ValidationError as exc:
        raise first_error(kind, exc) from None
    return cls(model)
