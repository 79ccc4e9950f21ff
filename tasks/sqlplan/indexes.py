"""Index specs: what an agent may ask for (table, columns, unique), checked against the schema.

An agent never names an index: the name is derived from the spec, and the DDL
is rendered by sqlglot from validated schema identifiers, so nothing an agent
writes reaches SQLite as text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from tasks.base import InvalidProposal
from tasks.sqlplan.workload import Schema

COLLATIONS = ("BINARY", "NOCASE", "RTRIM")
MAX_INDEX_COLUMNS = 10
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, order=True)
class IndexSpec:
    table: str
    columns: tuple[str, ...]
    collations: tuple[str, ...]
    """one of COLLATIONS per column (BINARY is SQLite's default)."""
    unique: bool = False
    where: tuple[str, ...] = ()
    """a partial index's terms (sorted): texts of the workload's own constant terms on the table."""

    @property
    def name(self) -> str:
        """Deterministic, short, and built only from validated identifiers."""
        key = f"{self.table}|{','.join(self.columns)}|{','.join(self.collations)}|{int(self.unique)}"
        if self.where:
            key += "|" + "\0".join(self.where)
        digest = hashlib.sha1(key.encode()).hexdigest()[:8]
        return f"bo_{self.table}_{digest}"

    def to_json(self) -> dict[str, Any]:
        cols: list[Any] = [
            {"expr": c} if not _IDENT.match(c) else c if coll == "BINARY" else {"name": c, "collate": coll}
            for c, coll in zip(self.columns, self.collations, strict=True)
        ]
        out: dict[str, Any] = {"table": self.table, "columns": cols, "unique": self.unique}
        if self.where:
            out["where"] = list(self.where)
        return out

    def label(self) -> str:
        cols = ", ".join(
            c if k == "BINARY" else f"{c} COLLATE {k}" for c, k in zip(self.columns, self.collations)
        )
        where = f" WHERE {self.where_sql()}" if self.where else ""
        return f"{'unique ' if self.unique else ''}{self.table}({cols}){where}"

    def where_sql(self) -> str:
        """The terms joined by AND (each already our own rendering of a query's term)."""
        return " AND ".join(f"({t})" for t in self.where)

    def create_sql(self) -> str:
        cols = []
        for c, coll in zip(self.columns, self.collations, strict=True):
            # an expression column is the text of one of the workload's own expressions (checked
            # against the catalogue on parsing), re-parsed and rendered by sqlglot
            col: exp.Expression = exp.column(exp.to_identifier(c))
            if not _IDENT.match(c):
                col = exp.maybe_parse(c, dialect="sqlite")
            if coll != "BINARY":
                col = exp.Collate(this=col, expression=exp.var(coll))
            cols.append(exp.Ordered(this=col, nulls_first=True))
        create = exp.Create(
            this=exp.Index(
                this=exp.to_identifier(self.name),
                table=exp.Table(this=exp.to_identifier(self.table)),
                params=exp.IndexParameters(columns=cols),
            ),
            kind="INDEX",
            unique=self.unique,
        )
        sql = create.sql("sqlite")
        return f"{sql} WHERE {self.where_sql()}" if self.where else sql

    def drop_sql(self) -> str:
        return exp.Drop(tables=[exp.Table(this=exp.to_identifier(self.name))], kind="INDEX", exists=True).sql(
            "sqlite"
        )


def _ident(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise InvalidProposal(f"{what} {value!r} is not a plain SQL identifier", "bad_identifier")
    return value


def parse_index_spec(raw: Any, schema: Schema) -> IndexSpec:
    """Decode ``{"table", "columns", "unique"}``; unknown table/column or odd shapes are refused."""
    if not isinstance(raw, dict):
        raise InvalidProposal("an index spec must be an object {table, columns, unique}", "bad_shape")
    extra = set(raw) - {"table", "columns", "unique", "where"}
    if extra:
        raise InvalidProposal(f"unknown index spec keys {sorted(extra)}", "bad_shape")
    table = _ident(raw.get("table"), "table")
    if table not in schema.tables:
        raise InvalidProposal(f"table {table!r} does not exist", "unknown_table")
    cols_raw = raw.get("columns")
    if not isinstance(cols_raw, list) or not 1 <= len(cols_raw) <= MAX_INDEX_COLUMNS:
        raise InvalidProposal(f"columns must be a list of 1..{MAX_INDEX_COLUMNS} column names", "bad_shape")
    cols: list[str] = []
    colls: list[str] = []
    for c in cols_raw:
        name, coll = _column(c, table, schema)
        if name in cols:
            raise InvalidProposal(f"column {name!r} repeated in an index", "bad_shape")
        cols.append(name)
        colls.append(coll)
    unique = raw.get("unique", False)
    if not isinstance(unique, bool):
        raise InvalidProposal("unique must be true or false", "bad_shape")
    return IndexSpec(table, tuple(cols), tuple(colls), unique, _where(raw.get("where"), table, schema))


def _column(c: Any, table: str, schema: Schema) -> tuple[str, str]:
    """One index column: a name, ``{name, collate}``, or ``{expr}`` naming one of the workload's own
    expressions on the table verbatim (``schema.expressions``). Returns (name or text, collation)."""
    if isinstance(c, dict) and set(c) == {"expr"}:
        known = schema.expressions.get(table, frozenset())
        if not isinstance(c["expr"], str) or c["expr"] not in known:
            raise InvalidProposal(
                f"expression {c['expr']!r} is not one of the workload's expressions on {table} "
                f"({sorted(known)})",
                "bad_predicate",
            )
        return c["expr"], "BINARY"
    coll = "BINARY"
    if isinstance(c, dict):
        if set(c) - {"name", "collate"}:
            raise InvalidProposal("a column is a name, {name, collate} or {expr}", "bad_shape")
        coll = str(c.get("collate", "BINARY")).upper()
        if coll not in COLLATIONS:
            raise InvalidProposal(
                f"collation {c.get('collate')!r} is not one of {COLLATIONS}", "bad_identifier"
            )
        c = c.get("name")
    name = _ident(c, "column")
    if not schema.has_column(table, name):
        raise InvalidProposal(f"column {name!r} does not exist in table {table!r}", "unknown_column")
    return name, coll


def _where(raw: Any, table: str, schema: Schema) -> tuple[str, ...]:
    """A partial index's terms: each must be, verbatim, one of the workload's constant terms on the
    table (``schema.predicates``); the SQL that runs is that catalogue's text, rendered by us."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_INDEX_COLUMNS:
        raise InvalidProposal(f"where must be a list of 1..{MAX_INDEX_COLUMNS} terms", "bad_shape")
    known = schema.predicates.get(table, frozenset())
    terms: set[str] = set()
    for t in raw:
        if not isinstance(t, str) or t not in known:
            raise InvalidProposal(
                f"where term {t!r} is not one of the workload's constant terms on {table} ({sorted(known)})",
                "bad_predicate",
            )
        terms.add(t)
    return tuple(sorted(terms))


@dataclass(frozen=True)
class TableRebuild:
    """One table's step from the extra indexes it has (in creation order) to the wanted ones."""

    table: str
    keep: list[IndexSpec]
    drop: list[IndexSpec]
    create: list[IndexSpec]


def rebuilds(
    have: Mapping[str, Sequence[IndexSpec]], want: frozenset[IndexSpec], tables: frozenset[str]
) -> Iterator[TableRebuild]:
    """Per table of ``tables`` or of ``want``: what to drop and create so its extra indexes are exactly
    ``want``'s, always created in sorted order, keeping the longest prefix that already matches.

    SQLite breaks ties between equally good indexes by their order in the table's index list, i.e. by
    creation order; creating them sorted makes a plan a function of the index *set*, not of the history.
    """
    for table in sorted(tables | {i.table for i in want}):
        target = sorted(i for i in want if i.table == table)
        now = list(have.get(table, ()))
        keep = 0
        while keep < min(len(now), len(target)) and now[keep] == target[keep]:
            keep += 1
        yield TableRebuild(table, now[:keep], now[keep:], target[keep:])
