"""The installed task kinds: every entry point of the group ``blockopt.tasks``.

Built-in kinds are registered the same way (``pyproject.toml``), so an external
package is no different from ``quadratic``. A kind that fails to load (import
error, not a ``Task``, a parameter named like a runner option) is left out with a
one-line reason naming its package (``broken_kinds``); the others keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from pydantic import BaseModel, ValidationError

from tasks import capabilities
from tasks.base import RUNNER_OPTIONS, Task

GROUP = "blockopt.tasks"


class UnknownKind(LookupError):
    pass


class InvalidParams(ValueError):
    """Task parameters that do not fit the kind's ``Params`` model; names the parameter."""

    def __init__(self, kind: str, param: str, reason: str) -> None:
        super().__init__(f"{kind}: parameter '{param}': {reason}")
        self.kind = kind
        self.param = param
        self.reason = reason


class KindRefused(TypeError):
    """A class that cannot be registered as a kind; the message says why."""


@dataclass(frozen=True)
class KindSource:
    """Where an installed kind comes from."""

    kind: str
    package: str
    version: str
    target: str
    """``module:attribute`` of the entry point."""
    error: str | None = None
    """Why the kind did not load (one line), or None when it did."""


def _package(ep: EntryPoint) -> tuple[str, str]:
    dist = ep.dist
    return (dist.name, dist.version) if dist is not None else ("?", "?")


def check_kind(name: str, cls: Any) -> type[Task[Any, Any]]:
    """``cls`` as a registrable kind, or KindRefused saying what is wrong with it."""
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise KindRefused(f"{cls!r} is not a tasks.base.Task subclass")
    if getattr(cls, "kind", None) != name:
        raise KindRefused(f"entry point '{name}' names a class whose kind is {getattr(cls, 'kind', None)!r}")
    if getattr(cls, "__abstractmethods__", None):
        raise KindRefused(
            f"{cls.__name__} leaves required members unimplemented: "
            f"{', '.join(sorted(cls.__abstractmethods__))}"
        )
    half = capabilities.half_offered(cls)
    if half:
        raise KindRefused(
            f"{cls.__name__} offers part of a capability (tasks/capabilities.py): {'; '.join(half)}"
        )
    models: dict[str, type[BaseModel]] = {"Params": cls.Params, "ProposerParams": cls.ProposerParams}
    for attr, model in models.items():
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise KindRefused(f"{cls.__name__}.{attr} is not a pydantic model")
        clash = sorted(set(model.model_fields) & RUNNER_OPTIONS)
        if clash:
            raise KindRefused(
                f"{cls.__name__}.{attr} field '{clash[0]}' collides with the runner option "
                f"--{clash[0].replace('_', '-')}; rename it"
            )
    both = sorted(set(cls.Params.model_fields) & set(cls.ProposerParams.model_fields))
    if both:
        raise KindRefused(
            f"{cls.__name__}: '{both[0]}' is a field of both Params and ProposerParams; rename one"
        )
    return cls


@cache
def _load() -> tuple[dict[str, type[Task[Any, Any]]], tuple[KindSource, ...]]:
    found: dict[str, type[Task[Any, Any]]] = {}
    sources: list[KindSource] = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        package, version = _package(ep)
        error = None
        try:
            if ep.name in found:
                raise KindRefused(f"kind '{ep.name}' is already registered by another package")
            found[ep.name] = check_kind(ep.name, ep.load())
        except Exception as exc:  # a broken plugin must not take the other kinds down
            first = (str(exc).strip().splitlines() or [""])[0]
            error = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        sources.append(KindSource(ep.name, package, version, ep.value, error))
    return found, tuple(sources)


def kinds() -> dict[str, type[Task[Any, Any]]]:
    """The kinds that loaded, by name."""
    return _load()[0]


def kind_sources() -> tuple[KindSource, ...]:
    """Every ``blockopt.tasks`` entry point, loaded or not, with its package."""
    return _load()[1]


def broken_kinds() -> list[KindSource]:
    return [s for s in kind_sources() if s.error is not None]


def refresh() -> None:
    """Forget what was loaded (after installing a package in this process; tests)."""
    _load.cache_clear()
    _load_one.cache_clear()


@cache
def _load_one(kind: str) -> type[Task[Any, Any]] | None:
    """Only ``kind``'s entry point, as ``_load`` would check it; None when it is missing or broken (the full
    load then says why). An agent process needs one kind: loading them all cost it ~1 s of CPU at start."""
    found = entry_points(group=GROUP, name=kind)
    if len(found) != 1:
        return None
    try:
        return check_kind(kind, next(iter(found)).load())
    except Exception:  # reported by the full load, with its package
        return None


def kind_class(kind: str) -> type[Task[Any, Any]]:
    if _load.cache_info().currsize == 0:
        one = _load_one(kind)
        if one is not None:
            return one
    try:
        return kinds()[kind]
    except KeyError:
        broken = next((s for s in broken_kinds() if s.kind == kind), None)
        if broken is not None:
            raise UnknownKind(
                f"task kind '{kind}' (package {broken.package}) failed to load: {broken.error}"
            ) from None
        raise UnknownKind(f"unknown task kind '{kind}' (known: {', '.join(sorted(kinds()))})") from None


def first_error(kind: str, exc: ValidationError) -> InvalidParams:
    err = exc.errors()[0]
    param = ".".join(str(p) for p in err.get("loc", ())) or "params"
    return InvalidParams(kind, param, err.get("msg", "invalid"))


def create_task(kind: str, params: dict[str, Any]) -> Task[Any, Any]:
    """Build a task from plain parameters; raises UnknownKind or InvalidParams."""
    cls = kind_class(kind)
    try:
        model = cls.Params.model_validate(params)
    except ValidationError as exc:
        raise first_error(kind, exc) from None
    return cls(model)


def rejection_codes() -> frozenset[str]:
    """Every rejection code an installed kind declares, plus the common ones."""
    from tasks.base import COMMON_REJECTION_CODES

    codes: set[str] = set(COMMON_REJECTION_CODES)
    for cls in kinds().values():
        codes |= cls.rejection_codes
    return frozenset(codes)
