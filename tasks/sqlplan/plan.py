"""Structured query plans and their rendering with sqlglot.

A query's plan is, per comma-separated FROM list ("scope"), an optional join
order (rendered as CROSS JOIN, which SQLite never reorders) and optional
per-table hints (INDEXED BY one of the task's indexes, or NOT INDEXED). The SQL
that runs is always the original query's syntax tree with those changes applied
by us; an agent's strings are only ever compared against names we parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.sqlite import SQLite

from tasks.base import InvalidProposal
from tasks.sqlplan.indexes import IndexSpec, parse_index_spec
from tasks.sqlplan.workload import Schema


class _CommaSQLite(SQLite):
    """SQLite whose parser keeps comma joins distinct from explicit CROSS JOIN.

    sqlglot's SQLite parser marks ``FROM a, b`` as CROSS joins, which would pin
    the join order of every original query; we need to tell the two apart.
    """

    class Parser(SQLite.Parser):  # type: ignore[valid-type,misc]
        JOINS_HAVE_EQUAL_PRECEDENCE = False


def _from(sel: exp.Select) -> exp.From | None:
    return sel.args.get("from_") or sel.args.get("from")


def _is_comma(join: exp.Join) -> bool:
    a = join.args
    return not (a.get("kind") or a.get("side") or a.get("on") or a.get("using") or a.get("method"))


def _ref(item: exp.Expression) -> str:
    return item.alias_or_name


@dataclass(frozen=True)
class Scope:
    """One SELECT's FROM clause: its items by reference name, and which are real tables."""

    id: int
    refs: tuple[str, ...]
    tables: dict[str, str]
    """ref → base table, for items that are schema tables (not CTEs or subqueries)."""
    reorderable: bool
    joins: tuple[tuple[str, str], ...] = ()
    """pairs of refs joined by an equality predicate in this scope's WHERE (for proposers)."""


@dataclass(frozen=True)
class QueryModel:
    """A parsed query: its scopes and the tables it reads."""

    qid: str
    sql: str
    tree: exp.Expression
    scopes: tuple[Scope, ...]

    @property
    def tables(self) -> frozenset[str]:
        return frozenset(t for s in self.scopes for t in s.tables.values())

    def describe(self) -> list[dict[str, Any]]:
        return [
            {
                "scope": s.id,
                "refs": list(s.refs),
                "tables": s.tables,
                "reorderable": s.reorderable,
                "join_pairs": [list(p) for p in s.joins],
            }
            for s in self.scopes
        ]


@dataclass(frozen=True)
class QueryPlan:
    orders: tuple[tuple[int, tuple[str, ...]], ...] = ()
    hints: tuple[tuple[int, str, IndexSpec | None], ...] = ()
    """(scope, ref, index) — index None means NOT INDEXED."""

    @property
    def is_default(self) -> bool:
        return not self.orders and not self.hints

    def key(self) -> tuple[Any, ...]:
        return (self.orders, self.hints)

    def to_json(self) -> dict[str, Any]:
        return {
            "orders": {str(s): list(o) for s, o in self.orders},
            "hints": [
                {"scope": s, "table": r, "index": None if i is None else i.to_json()}
                for s, r, i in self.hints
            ],
        }

    def hinted_indexes(self) -> set[IndexSpec]:
        return {i for _, _, i in self.hints if i is not None}


DEFAULT_PLAN = QueryPlan()


def _scope_items(sel: exp.Select) -> list[exp.Expression]:
    f = _from(sel)
    if f is None:
        return []
    return [f.this] + [j.this for j in sel.args.get("joins") or []]


def _selects(tree: exp.Expression) -> list[exp.Select]:
    return [s for s in tree.find_all(exp.Select) if _from(s) is not None]


def _join_pairs(sel: exp.Select, refs: dict[str, str], schema: Schema) -> tuple[tuple[str, str], ...]:
    """Pairs of this scope's refs linked by ``col = col`` in its own WHERE (used to sample connected orders)."""
    where = sel.args.get("where")
    if where is None:
        return ()

    def owner(col: exp.Column) -> str | None:
        if col.table:
            return col.table if col.table in refs else None
        hits = [r for r, t in refs.items() if t and schema.has_column(t, col.name)]
        return hits[0] if len(hits) == 1 else None

    pairs: set[tuple[str, str]] = set()
    for eq in where.find_all(exp.EQ):
        a, b = eq.this, eq.expression
        if isinstance(a, exp.Column) and isinstance(b, exp.Column):
            oa, ob = owner(a), owner(b)
            if oa and ob and oa != ob:
                pairs.add(tuple(sorted((oa, ob))))  # type: ignore[arg-type]
    return tuple(sorted(pairs))


def parse_query(qid: str, sql: str, schema: Schema) -> QueryModel:
    try:
        tree: exp.Expression = sqlglot.parse_one(sql, read=_CommaSQLite)  # type: ignore[assignment]
    except sqlglot.errors.ParseError as exc:
        raise ValueError(f"{qid}: cannot parse: {exc}") from None
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    scopes: list[Scope] = []
    for sel in _selects(tree):
        items = _scope_items(sel)
        refs = tuple(_ref(i) for i in items)
        tables = {
            _ref(i): i.name
            for i in items
            if isinstance(i, exp.Table)
            and i.name in schema.tables
            and i.name not in ctes
            and not i.args.get("db")
        }
        joins = sel.args.get("joins") or []
        reorderable = len(items) >= 2 and all(_is_comma(j) for j in joins) and len(set(refs)) == len(refs)
        named = {r: tables.get(r, "") for r in refs}
        scopes.append(Scope(len(scopes), refs, tables, reorderable, _join_pairs(sel, named, schema)))
    return QueryModel(qid, sql, tree, tuple(scopes))


def parse_plan(raw: Any, model: QueryModel, schema: Schema) -> QueryPlan:
    """Decode a plan's JSON against the query's scopes; anything unknown is refused with a reason."""
    q = model.qid
    if raw is None:
        return DEFAULT_PLAN
    if not isinstance(raw, dict) or set(raw) - {"orders", "hints"}:
        raise InvalidProposal(f"{q}: a plan is an object {{orders, hints}}", "bad_shape")
    orders: list[tuple[int, tuple[str, ...]]] = []
    raw_orders = raw.get("orders") or {}
    if not isinstance(raw_orders, dict):
        raise InvalidProposal(f"{q}: orders must map scope ids to lists of tables", "bad_shape")
    for key, order in raw_orders.items():
        try:
            sid = int(key)
            scope = model.scopes[sid]
        except (ValueError, IndexError, TypeError):
            raise InvalidProposal(f"{q}: no FROM list with id {key!r}", "unknown_scope") from None
        if not scope.reorderable:
            raise InvalidProposal(
                f"{q}: FROM list {sid} cannot be reordered (not a comma list)", "illegal_move"
            )
        if not isinstance(order, list) or sorted(map(str, order)) != sorted(scope.refs):
            raise InvalidProposal(
                f"{q}: order for FROM list {sid} must be a permutation of {list(scope.refs)}", "bad_order"
            )
        orders.append((sid, tuple(order)))  # even the written order: CROSS JOIN pins it
    hints: list[tuple[int, str, IndexSpec | None]] = []
    raw_hints = raw.get("hints") or []
    if not isinstance(raw_hints, list):
        raise InvalidProposal(f"{q}: hints must be a list", "bad_shape")
    seen: set[tuple[int, str]] = set()
    for h in raw_hints:
        if not isinstance(h, dict) or set(h) - {"scope", "table", "index"}:
            raise InvalidProposal(f"{q}: a hint is {{scope, table, index}}", "bad_shape")
        try:
            scope = model.scopes[int(h.get("scope", -1))]
            if int(h.get("scope", -1)) < 0:
                raise IndexError
        except (ValueError, IndexError, TypeError):
            raise InvalidProposal(
                f"{q}: hint names no FROM list ({h.get('scope')!r})", "unknown_scope"
            ) from None
        ref = h.get("table")
        if not isinstance(ref, str) or ref not in scope.tables:
            raise InvalidProposal(
                f"{q}: hint table {ref!r} is not a table of FROM list {scope.id} ({sorted(scope.tables)})",
                "unknown_table",
            )
        if (scope.id, ref) in seen:
            raise InvalidProposal(f"{q}: two hints for {ref} in FROM list {scope.id}", "bad_shape")
        seen.add((scope.id, ref))
        idx = None
        if h.get("index") is not None:
            idx = parse_index_spec(h["index"], schema)
            if idx.table != scope.tables[ref]:
                raise InvalidProposal(
                    f"{q}: hint on {ref} ({scope.tables[ref]}) names an index on {idx.table}", "bad_hint"
                )
        hints.append((scope.id, ref, idx))
    return QueryPlan(tuple(sorted(orders)), tuple(sorted(hints, key=lambda t: (t[0], t[1]))))


def builtin_index_name(spec: IndexSpec, builtin: dict[IndexSpec, str]) -> str:
    return builtin.get(spec, spec.name)


def render(model: QueryModel, plan: QueryPlan, builtin: dict[IndexSpec, str] | None = None) -> str:
    """The original query with the plan's join orders and hints, as SQLite SQL."""
    if plan.is_default:
        return model.sql
    tree = model.tree.copy()
    sels = _selects(tree)
    orders = dict(plan.orders)
    hints = {(s, r): i for s, r, i in plan.hints}
    for sid, sel in enumerate(sels):
        items = _scope_items(sel)
        by_ref = {_ref(i): i for i in items}
        for (hs, ref), idx in hints.items():
            if hs != sid:
                continue
            table = by_ref[ref]
            if idx is None:
                table.set("indexed", False)
            else:
                name = builtin_index_name(idx, builtin or {})
                table.set("indexed", exp.Table(this=exp.to_identifier(name)))
        if sid in orders:
            order = [by_ref[r] for r in orders[sid]]
            sel.set("from_" if "from_" in sel.args else "from", exp.From(this=order[0]))
            sel.set("joins", [exp.Join(this=t, kind="CROSS") for t in order[1:]])
    return tree.sql(dialect="sqlite")
