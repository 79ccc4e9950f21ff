"""Confine file paths in task params to the coordinator's data directories.

A task's params come from whoever holds the admin token, over HTTP; a kind that
reads a map, a scenario, a database or a query folder from disk would read any
file the process can. Kinds mark such fields with ``tasks.paths.DataPath``;
this module checks every marked value against ``ServiceSettings.data_dirs``
before the task is built, without knowing any kind.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from coordinator import errors
from tasks.paths import marked_paths


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def check_params(params_model: type, params: dict[str, Any], data_dirs: Iterable[Path]) -> None:
    """InvalidRequest (400) for a marked path that resolves outside every data directory (symlinks and
    ``..`` resolved first, so neither escapes)."""
    roots = [Path(d).expanduser().resolve() for d in data_dirs]
    for name, value in marked_paths(params_model, params):
        resolved = Path(value).expanduser().resolve()
        if not _inside(resolved, roots):
            where = ", ".join(str(r) for r in roots) if roots else "none configured"
            raise errors.InvalidRequest(
                f"params.{name}: the path '{value}' is outside the coordinator's data directories ({where}); "
                "start the coordinator with --data-dir DIR to allow files under DIR",
                field=f"params.{name}",
            )


def dirs_for(params_model: type, params: dict[str, Any]) -> tuple[Path, ...]:
    """The directories that allow the paths these params name (``blockopt run`` trusts its own command line)."""
    found = []
    for _, value in marked_paths(params_model, params):
        path = Path(value).expanduser().resolve()
        found.append(path if path.is_dir() else path.parent)
    return tuple(found)
