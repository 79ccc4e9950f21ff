"""The sqlite3 shell's ``.expert`` index recommendations (optional: skipped when the shell is absent).

Only the workload's own query text goes to the shell (never an agent's), the
database is opened ``-readonly``, and the recommended CREATE INDEX lines are
parsed by sqlglot into IndexSpecs, so they go through the same validation as
an agent's specs.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path

import sqlglot
from sqlglot import exp

from tasks.base import InvalidProposal
from tasks.sqlplan.indexes import IndexSpec, parse_index_spec
from tasks.sqlplan.workload import Schema

MISSING = "the sqlite3 shell is not installed (apt package `sqlite3`): .expert baselines skipped"


@cache
def shell() -> str | None:
    path = shutil.which("sqlite3")
    if not path:
        return None
    try:
        out = subprocess.run(
            [path, ":memory:"], input=".expert\nSELECT 1;\n", capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if "(no new indexes)" in out.stdout or out.returncode == 0 else None


def _spec(stmt: str, schema: Schema) -> IndexSpec | None:
    try:
        tree = sqlglot.parse_one(stmt, read="sqlite")
    except sqlglot.errors.ParseError:
        return None
    if not isinstance(tree, exp.Create) or not isinstance(tree.this, exp.Index):
        return None
    idx = tree.this
    cols: list[object] = []
    for o in idx.args["params"].args.get("columns") or []:
        e = o.this if isinstance(o, exp.Ordered) else o
        if isinstance(e, exp.Collate):
            cols.append({"name": e.this.name, "collate": e.expression.name})
        else:
            cols.append(e.name)
    try:
        return parse_index_spec(
            {"table": idx.args["table"].name, "columns": cols, "unique": bool(tree.args.get("unique"))},
            schema,
        )
    except InvalidProposal:
        return None


def recommend(db_path: Path, sql: str, schema: Schema) -> list[IndexSpec]:
    """The indexes ``.expert`` suggests for one query ([] when none, or when the shell is absent)."""
    path = shell()
    if path is None:
        return []
    try:
        out = subprocess.run(
            [path, "-readonly", str(db_path)],
            input=f".expert\n{sql.strip()}\n",
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    specs = []
    for line in out.stdout.splitlines():
        if line.upper().startswith("CREATE INDEX") or line.upper().startswith("CREATE UNIQUE INDEX"):
            spec = _spec(line, schema)
            if spec is not None:
                specs.append(spec)
    return specs
