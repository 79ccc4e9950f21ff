"""Workload = a SQLite database + named queries; generates and caches the TPC-H database.

The database is never committed: ``ensure_tpch_db(scale)`` runs ``tpchgen-cli``
once and loads its TBL output into ``$BLOCKOPT_CACHE/tpch/sf<scale>.db``
(default ``~/.cache/blockopt``), writing to a temporary file and renaming it so
concurrent first uses (tests, several agents) never see a half-built file.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "tpch"
SCHEMA_SQL = DATA_DIR / "schema.sql"
QUERIES_DIR = DATA_DIR / "queries"
TPCH_TABLES = ("region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem")


class WorkloadError(RuntimeError):
    """The database or the queries cannot be prepared (message says what to do)."""


@dataclass(frozen=True)
class Schema:
    """Tables → ordered column names, and the indexes the database file already has."""

    tables: dict[str, tuple[str, ...]]
    builtin_indexes: dict[str, tuple[str, tuple[str, ...], bool]]
    """index name → (table, columns, unique) for indexes the file already has (primary-key autoindexes)."""
    predicates: dict[str, frozenset[str]] = field(default_factory=dict)
    """table → the workload's constant terms on it (partial-index WHERE terms an agent may name);
    filled from the parsed queries by the Evaluator (tasks/sqlplan/partial.py)."""
    expressions: dict[str, frozenset[str]] = field(default_factory=dict)
    """table → the workload's arithmetic expressions over its columns (index expressions an agent may
    name); filled like ``predicates``."""

    def has_column(self, table: str, column: str) -> bool:
        return column in self.tables.get(table, ())


@dataclass(frozen=True)
class Workload:
    db_path: Path
    queries: dict[str, str]
    """query id (file stem, e.g. ``q01``) → SQL text, in id order."""
    schema: Schema
    name: str


def cache_dir() -> Path:
    root = os.environ.get("BLOCKOPT_CACHE") or str(Path.home() / ".cache" / "blockopt")
    return Path(root)


def tpch_db_path(scale: float) -> Path:
    return cache_dir() / "tpch" / f"sf{scale:g}.db"


def _tpchgen() -> str:
    here = Path(sys.executable).parent / "tpchgen-cli"
    found = str(here) if here.exists() else shutil.which("tpchgen-cli")
    if not found:
        raise WorkloadError("tpchgen-cli not found: `pip install tpchgen-cli` (a project dependency)")
    return found


def _tbl_rows(path: Path, ncols: int) -> Iterator[list[str]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            vals = line.rstrip("\n").removesuffix("|").split("|")
            if len(vals) != ncols:
                raise WorkloadError(f"{path}: expected {ncols} fields, got {len(vals)}")
            yield vals


def load_tbl(tbl_dir: Path, out: Path) -> None:
    """Bulk-load TBL files into a fresh file with our schema; no ANALYZE (the default-planner baseline)."""
    con = sqlite3.connect(out, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.executescript(SCHEMA_SQL.read_text())
        con.execute("BEGIN")
        for table in TPCH_TABLES:
            ncols = len(con.execute(f"PRAGMA table_info({table})").fetchall())
            marks = ",".join("?" * ncols)
            con.executemany(
                f"INSERT INTO {table} VALUES ({marks})", _tbl_rows(tbl_dir / f"{table}.tbl", ncols)
            )
        con.execute("COMMIT")
        con.execute("VACUUM")
    finally:
        con.close()


def ensure_tpch_db(scale: float, *, quiet: bool = False) -> Path:
    """The cached database for this scale factor, generated on first use (~1 s at SF 0.01)."""
    path = tpch_db_path(scale)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"generating TPC-H SF {scale:g} into {path} (once) ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        tbl = Path(tmp) / "tbl"
        try:
            subprocess.run(
                [_tpchgen(), "-s", f"{scale:g}", "--output-dir", str(tbl)],
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            )
        except subprocess.CalledProcessError as exc:
            raise WorkloadError(f"tpchgen-cli failed: {exc.stderr.strip()[-300:]}") from None
        db = Path(tmp) / "tpch.db"
        load_tbl(tbl, db)
        os.replace(db, path)
    return path


def read_schema(db_path: Path) -> Schema:
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_schema WHERE type='table' ORDER BY name")]
        tables = {
            t: tuple(r[1] for r in con.execute("SELECT * FROM pragma_table_info(?)", (t,)))
            for t in names
            if not t.startswith("sqlite_")
        }
        builtin = {}
        for name, table in con.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type='index'"):
            cols = tuple(r[2] for r in con.execute("SELECT * FROM pragma_index_info(?)", (name,)))
            unique = any(
                r[1] == name and r[2] for r in con.execute("SELECT * FROM pragma_index_list(?)", (table,))
            )
            builtin[name] = (table, cols, unique)
    finally:
        con.close()
    return Schema(tables=tables, builtin_indexes=builtin)


def read_queries(directory: Path) -> dict[str, str]:
    files = sorted(directory.glob("*.sql"))
    if not files:
        raise WorkloadError(f"no *.sql query files in {directory}")
    return {f.stem: f.read_text() for f in files}


def load_workload(db: str | None, queries: str | None, scale: float) -> Workload:
    """The user's database/queries when given, else the cached TPC-H database at ``scale``."""
    if db:
        db_path = Path(db).expanduser().resolve()
        if not db_path.exists():
            raise WorkloadError(f"database {db_path} does not exist")
        name = db_path.stem
    else:
        db_path = ensure_tpch_db(scale)
        name = f"tpch-sf{scale:g}"
    qdir = Path(queries).expanduser().resolve() if queries else QUERIES_DIR
    return Workload(db_path=db_path, queries=read_queries(qdir), schema=read_schema(db_path), name=name)
