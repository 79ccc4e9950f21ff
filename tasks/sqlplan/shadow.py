"""SQLite's plan for a query under an index set, read from a schema-only copy of the database.

Without ``sqlite_stat1`` SQLite's planner estimates from the schema alone, not from the rows, so EXPLAIN QUERY
PLAN on empty tables with the same indexes names the plan the full database would run; creating an index on
an empty table is free, where on lineitem it takes 50-100 ms at SF 0.01 and seconds at SF 1. Checked on TPC-H
SF 0.01 (60 random sets of the proposer's candidates, partial and expression indexes included, x 22 queries x
SQLite's order and a random join order per FROM list): 2,460 of 2,460 signatures equal. Still, only a
proposer uses it (to skip what cannot change, and to keep the known cost of a query whose plan stays);
the coordinator reuses a measurement only on the real database's own plan (``Evaluator.signature``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tasks.sqlplan.indexes import IndexSpec, rebuilds


class ShadowPlanner:
    """An in-memory database with the source's tables and indexes but no rows."""

    def __init__(self, db_path: Path) -> None:
        src = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            ddl = [
                r[0]
                for r in src.execute(
                    "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
                    " ORDER BY type = 'index', rowid"
                )
            ]
        finally:
            src.close()
        # no statement cache: a cached EXPLAIN is not re-prepared when an index is dropped (it reads no
        # table, so SQLite never checks its schema), and would name the old plan
        self.con = sqlite3.connect(
            ":memory:", cached_statements=0, isolation_level=None, check_same_thread=False
        )
        for sql in ddl:  # the source's own schema text (the database file the task was given)
            self.con.execute(sql)
        self._order: dict[str, list[IndexSpec]] = {}

    def _sync(self, want: frozenset[IndexSpec], tables: frozenset[str]) -> None:
        """Each table's extra indexes exactly ``want``, created in the same order as the real database's."""
        for step in rebuilds(self._order, want, tables):
            for i in step.drop:
                self.con.execute(i.drop_sql())
            self._order[step.table] = step.keep
            for i in step.create:
                self.con.execute(i.create_sql())
                self._order[step.table].append(i)

    def signature(self, sql: str, indexes: frozenset[IndexSpec], tables: frozenset[str]) -> tuple[str, ...]:
        """EXPLAIN QUERY PLAN of our rendered ``sql`` under ``indexes`` (the same format as the real one)."""
        try:
            self._sync(indexes, tables)
            rows = self.con.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
        except sqlite3.Error as exc:
            return (f"<error {exc}>",)
        return tuple(f"{r[1]}|{r[-1]}" for r in rows)
