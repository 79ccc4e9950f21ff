"""A marker for Params fields that may name files on the machine that builds the task.

A kind declares such a field as ``Annotated[str, DataPath(...)]``; the
coordinator (``coordinator.runtime.datapaths``) confines every marked value that names
a file to its configured data directories, without knowing the kind. A field
that also takes bundled names says which values are paths with ``is_path``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def any_value(value: str) -> bool:
    return True


@dataclass(frozen=True)
class DataPath:
    """Marks a parameter whose value may be a path on disk (a file or a directory)."""

    is_path: Callable[[str], bool] = any_value
    """Whether a value names a path (False: a bundled name the kind resolves itself)."""


def marked_paths(params_model: type, values: dict[str, object]) -> list[tuple[str, str]]:
    """(field, value) of every marked field in ``values`` whose value names a path."""
    fields = getattr(params_model, "model_fields", {})
    found: list[tuple[str, str]] = []
    for name, field in fields.items():
        value = values.get(name)
        if not isinstance(value, str):
            continue
        for marker in field.metadata:
            if isinstance(marker, DataPath) and marker.is_path(value):
                found.append((name, value))
    return found
