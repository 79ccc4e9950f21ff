"""Partial-index predicates and index expressions: the workload's own terms, by table.

A partial index helps a query only when the query's WHERE implies the index's WHERE, and SQLite
proves that by finding each index term among the query's terms (compared as expressions). So the
only useful predicates are the queries' own constant terms, and those are the only ones an agent
may name: an index's WHERE is a list of texts, each accepted only when it equals one of this
catalogue's keys, and what reaches SQLite is our rendering of the query's own syntax tree.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp

from tasks.sqlplan.plan import QueryModel, _selects
from tasks.sqlplan.workload import Schema


def _unqualified(term: exp.Expression) -> exp.Expression:
    t = term.copy()
    for col in t.find_all(exp.Column):
        col.set("table", None)
    return t


def constant_terms(model: QueryModel, schema: Schema) -> dict[tuple[int, str], list[str]]:
    """(scope id, table reference) → texts of the scope's WHERE conjuncts on that reference alone.

    A conjunct qualifies when every column in it is a column of that one base table, and it has no
    subquery (a correlated subquery reads other rows).
    """
    from tasks.sqlplan.joinorder import _conjuncts, _strip_parens

    out: dict[tuple[int, str], list[str]] = {}
    for scope, sel in zip(model.scopes, _selects(model.tree), strict=True):
        for c in _conjuncts(sel.args.get("where")):
            c = _strip_parens(c)
            cols = list(c.find_all(exp.Column))
            if not cols or c.find(exp.Select) is not None:
                continue
            owners = set()
            for col in cols:
                if col.table:
                    owners.add(col.table if col.table in scope.tables else "")
                else:
                    hits = [r for r, t in scope.tables.items() if schema.has_column(t, col.name)]
                    owners.add(hits[0] if len(hits) == 1 and len(scope.tables) == len(scope.refs) else "")
            if len(owners) != 1 or "" in owners:
                continue
            ref = owners.pop()
            out.setdefault((scope.id, ref), []).append(_unqualified(c).sql(dialect="sqlite"))
    return out


def catalogue(models: Iterable[QueryModel], schema: Schema) -> dict[str, frozenset[str]]:
    """table → every constant term that some query applies to it."""
    out: dict[str, set[str]] = {}
    for m in models:
        for (sid, ref), terms in constant_terms(m, schema).items():
            out.setdefault(m.scopes[sid].tables[ref], set()).update(terms)
    return {t: frozenset(v) for t, v in out.items()}


ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div)


def table_expressions(model: QueryModel, schema: Schema) -> dict[tuple[int, str], list[str]]:
    """(scope id, table reference) → texts of the arithmetic expressions in the scope's SELECT list
    (aggregate arguments included) over that reference's columns alone, largest first.

    An index on such an expression stores its value, and SQLite reads it from the index instead of
    recomputing it for every row (its expression compare must find the index's expression verbatim).
    """
    out: dict[tuple[int, str], list[str]] = {}
    for scope, sel in zip(model.scopes, _selects(model.tree), strict=True):
        for proj in sel.expressions:
            for node in proj.find_all(*ARITHMETIC):
                cols = list(node.find_all(exp.Column))
                if not cols or node.find(exp.Select) is not None or node.find(exp.AggFunc) is not None:
                    continue
                owners = set()
                for col in cols:
                    hits = [r for r, t in scope.tables.items() if schema.has_column(t, col.name)]
                    owners.add(col.table if col.table in scope.tables else hits[0] if len(hits) == 1 else "")
                if len(owners) != 1 or "" in owners:
                    continue
                text = _unqualified(node).sql(dialect="sqlite")
                out.setdefault((scope.id, owners.pop()), []).append(text)
    return {k: sorted(set(v), key=lambda t: (-len(t), t)) for k, v in out.items()}


def expression_catalogue(models: Iterable[QueryModel], schema: Schema) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for m in models:
        for (sid, ref), texts in table_expressions(m, schema).items():
            out.setdefault(m.scopes[sid].tables[ref], set()).update(texts)
    return {t: frozenset(v) for t, v in out.items()}
