"""Sandboxed execution: the database file read-only and shared, a private in-memory copy from the first DDL.

Why a private copy and not a read-only connection plus an index overlay:
SQLite cannot put an index on a main-schema table anywhere but in that
table's own schema (a TEMP index may only index a TEMP table), so trying an
index needs a writable database. But a process that only reads (an agent
that screens on a smaller database, the reference runs of the original
queries) needs no copy: until its first index DDL a sandbox reads the file
itself, opened ``mode=ro&immutable=1`` and memory-mapped, so every process
shares the operating system's page cache (at SF 1 a copy is ~1 GB per
process). The first DDL copies the file into ``:memory:`` with the backup
API (~20 ms at SF 0.01); the source file can never change, and each
evaluator (coordinator, every proposer) owns its copy, so nothing one
evaluation does can leak into another's. The VM steps of a query are the
same on the file and on the copy (the backup copies the pages as they are).

Cost = progress-handler callbacks per 1,000 VM steps, which is deterministic
(the statement cache is off: a cached, re-used statement shifts the count).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROGRESS_STEPS = 1000
"""VM instructions per progress callback: the unit of cost."""

_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}

_A = sqlite3
_QUERY_ACTIONS = {_A.SQLITE_SELECT, _A.SQLITE_READ, _A.SQLITE_FUNCTION, _A.SQLITE_RECURSIVE}
_SCHEMA_TABLES = {"sqlite_master", "sqlite_schema", "sqlite_stat1", "sqlite_stat4"}


class SandboxError(RuntimeError):
    """A statement the sandbox refused or could not run; ``code`` says which kind."""

    def __init__(self, reason: str, code: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


class StepCapExceeded(SandboxError):
    def __init__(self, cap: int) -> None:
        super().__init__(f"query stopped after {cap} x {PROGRESS_STEPS} VM steps (step cap)", "step_cap")
        self.cap = cap


@dataclass(frozen=True)
class Run:
    rows: list[tuple[Any, ...]]
    cost: int
    """progress callbacks (units of 1,000 VM steps)."""
    seconds: float


class Sandbox:
    """One private database copy; runs only reads, plus index DDL that we generate ourselves."""

    def __init__(self, db_path: Path, default_cap: int = 2_000_000) -> None:
        self.db_path = db_path
        self.con = sqlite3.connect(
            f"file:{db_path}?mode=ro&immutable=1",
            uri=True,
            cached_statements=0,
            isolation_level=None,
            check_same_thread=False,
        )
        self.con.execute(f"PRAGMA mmap_size = {1 << 40}")  # reads share the OS page cache, no private copy
        self.copied = False
        """True once the first DDL made the private in-memory copy."""
        self.default_cap = default_cap
        self._mode = "query"
        self._ticks = 0
        self._cap = default_cap
        self._guard(self.con)

    def _guard(self, con: sqlite3.Connection) -> None:
        con.set_authorizer(self._authorize)
        con.set_progress_handler(self._progress, PROGRESS_STEPS)

    def _private(self) -> None:
        """Switch from the shared read-only file to a private writable copy (before the first DDL)."""
        if self.copied:
            return
        mem = sqlite3.connect(":memory:", cached_statements=0, isolation_level=None, check_same_thread=False)
        self.con.set_authorizer(None)
        self.con.set_progress_handler(None, PROGRESS_STEPS)
        try:
            self.con.backup(mem)
        finally:
            self.con.close()
        self.con = mem
        self.copied = True
        self._guard(mem)

    def close(self) -> None:
        self.con.close()

    # -- guards -----------------------------------------------------------
    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None
    ) -> int:
        if action == _A.SQLITE_FUNCTION:
            return _A.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else _A.SQLITE_OK
        if db not in (None, "main"):
            return _A.SQLITE_DENY  # no attached or temp databases
        if action in _QUERY_ACTIONS:
            return _A.SQLITE_OK
        if self._mode == "ddl":
            if action in (_A.SQLITE_CREATE_INDEX, _A.SQLITE_DROP_INDEX, _A.SQLITE_REINDEX):
                return _A.SQLITE_OK
            if action in (_A.SQLITE_INSERT, _A.SQLITE_UPDATE, _A.SQLITE_DELETE) and arg1 in _SCHEMA_TABLES:
                return _A.SQLITE_OK
        if self._mode == "analyze":
            if action == _A.SQLITE_ANALYZE:
                return _A.SQLITE_OK
            if action in (_A.SQLITE_INSERT, _A.SQLITE_UPDATE, _A.SQLITE_DELETE, _A.SQLITE_CREATE_TABLE) and (
                arg1 in _SCHEMA_TABLES
            ):
                return _A.SQLITE_OK
        return _A.SQLITE_DENY

    def _progress(self) -> int:
        self._ticks += 1
        return 1 if self._ticks > self._cap else 0

    # -- running ----------------------------------------------------------
    def query(self, sql: str, cap: int | None = None) -> Run:
        """Run one read-only statement; raise StepCapExceeded past ``cap`` x 1,000 steps."""
        self._mode = "query"
        self._cap = self.default_cap if cap is None else cap
        self._ticks = 0
        t0 = time.perf_counter()
        try:
            rows = self.con.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if self._ticks > self._cap:
                raise StepCapExceeded(self._cap) from None
            msg = str(exc)
            code = "not_authorized" if "authoriz" in msg else "sql_error"
            raise SandboxError(msg, code) from None
        except sqlite3.DatabaseError as exc:
            raise SandboxError(str(exc), "sql_error") from None
        except sqlite3.Warning as exc:  # e.g. "You can only execute one statement at a time."
            raise SandboxError(str(exc), "sql_error") from None
        return Run(rows=rows, cost=self._ticks, seconds=time.perf_counter() - t0)

    def ddl(self, statements: Iterable[str]) -> None:
        """Run index DDL that the task rendered itself (never agent text)."""
        statements = list(statements)
        if statements:
            self._private()
        self._mode = "ddl"
        self._cap = 10**12
        try:
            for sql in statements:
                try:
                    self.con.execute(sql)
                except sqlite3.Error as exc:
                    raise SandboxError(f"{exc} (in {sql})", "ddl_error") from None
        finally:
            self._mode = "query"

    def analyze(self) -> None:
        self._private()
        self._mode = "analyze"
        self._cap = 10**12
        try:
            self.con.execute("ANALYZE")
        finally:
            self._mode = "query"

    def index_names(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT name FROM sqlite_schema WHERE type='index'")}

    def object_bytes(self, name: str) -> int:
        """Bytes of one b-tree (from the dbstat virtual table)."""
        self.con.set_authorizer(None)  # our own fixed statement; dbstat needs a virtual-table cursor
        try:
            row = self.con.execute(
                "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?", (name,)
            ).fetchone()
        finally:
            self.con.set_authorizer(self._authorize)
        return int(row[0])
