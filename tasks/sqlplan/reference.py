"""The original queries' results (the equivalence reference), cached on disk for every process.

At scale an original query may not finish (SQLite's own plan for TPC-H q17 at SF 1 is a nested scan of
~10^8 progress callbacks); its rows then come from the same SQL text run with single-column indexes on the
columns its predicates compare with '=' (``equality_indexes``): an index changes how SQLite finds rows,
never which rows a query returns, so the text with indexes is equivalent by construction.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from pathlib import Path
from typing import Any

from tasks.sqlplan.indexes import IndexSpec
from tasks.sqlplan.plan import QueryModel
from tasks.sqlplan.workload import Workload, cache_dir

REL_TOL = 1e-9


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Orders rows regardless of type; floats rounded so that 1e-12 noise cannot reorder them."""
    key: list[Any] = []
    for v in row:
        if v is None:
            key.append((0, 0))
        elif isinstance(v, (int, float)):
            key.append((1, float(f"{float(v):.9g}")))
        elif isinstance(v, str):
            key.append((2, v))
        else:
            key.append((3, bytes(v)))
    return tuple(key)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=0.0) or a == b
    return a == b


def compare_rows(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> str:
    """'' when equal as multisets of rows (floats within 1e-9 relative), else what differs."""
    if len(got) != len(want):
        return f"returns {len(got)} rows, the original returns {len(want)}"
    for i, (g, w) in enumerate(zip(sorted(got, key=_sort_key), sorted(want, key=_sort_key), strict=True)):
        if len(g) != len(w) or not all(_same_value(x, y) for x, y in zip(g, w, strict=True)):
            return f"row {i} (sorted) differs: {g!r} vs the original's {w!r}"
    return ""


def reference_file(workload: Workload, reference_cap: int | None = None) -> Path:
    """One file per (database file version, query texts, reference cap): results of the original queries."""
    st = workload.db_path.stat()
    cap = "" if reference_cap is None else f"|cap{reference_cap}"
    h = hashlib.sha256(f"{workload.db_path}|{st.st_size}|{st.st_mtime_ns}{cap}".encode())
    for q in sorted(workload.queries):
        h.update(q.encode() + b"\0" + workload.queries[q].encode() + b"\0")
    return cache_dir() / "sqlplan-reference" / f"{h.hexdigest()[:24]}.json"


def load_reference(
    workload: Workload, reference_cap: int | None
) -> dict[str, tuple[list[tuple[Any, ...]], int, str]]:
    """Every process (coordinator, each agent) needs the original results; the first one stores them.

    query -> (rows, default cost, source): source is '' when the original query itself gave the rows, else
    the equivalent plan that did (the default cost is then a lower bound, see ``Evaluator.open_default``)."""
    try:
        data = json.loads(reference_file(workload, reference_cap).read_text())
        return {
            q: ([tuple(r) for r in v["rows"]], int(v["cost"]), str(v.get("source", "")))
            for q, v in data.items()
        }
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def store_reference(
    workload: Workload,
    reference_cap: int | None,
    rows: dict[str, list[tuple[Any, ...]]],
    costs: dict[str, int],
    sources: dict[str, str],
) -> None:
    path = reference_file(workload, reference_cap)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if any(isinstance(v, bytes) for r in rows.values() for row in r for v in row):
            return  # blobs do not survive JSON; such workloads just recompute
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(
            json.dumps({q: {"rows": rows[q], "cost": costs[q], "source": sources.get(q, "")} for q in rows})
        )
        os.replace(tmp, path)
    except OSError:
        pass


def rowid_alias(db_path: Path, table: str) -> str | None:
    """The INTEGER PRIMARY KEY column of ``table`` (the table's own key: an index on it adds nothing)."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT name, type, pk FROM pragma_table_info(?)", (table,)).fetchall()
    finally:
        con.close()
    pks = [r for r in rows if r[2]]
    return str(pks[0][0]) if len(pks) == 1 and str(pks[0][1]).upper() == "INTEGER" else None


def equality_indexes(
    model: QueryModel, workload: Workload, builtin: dict[IndexSpec, str]
) -> frozenset[IndexSpec]:
    """One single-column index per column the query compares with '=' (or IN), unless a key leads with it."""
    from tasks.sqlplan.proposer import predicate_columns

    lead = {(i.table, i.columns[0]) for i in builtin}
    return frozenset(
        IndexSpec(t, (c,), ("BINARY",))
        for t, (eqs, _) in predicate_columns(model, workload.schema).items()
        for c in eqs
        if (t, c) not in lead and c != rowid_alias(workload.db_path, t)
    )
