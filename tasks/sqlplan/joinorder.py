"""Join orders by dynamic programming over a scope's join graph, with measured cardinalities.

A reorderable FROM list is rendered as a chain of CROSS JOINs, which SQLite runs as nested loops in
the written order: a left-deep plan. Its cost under our model is a sum of per-step costs, and a step
depends only on the set already joined (its cardinality, and which join predicates reach the new
table), so the best left-deep order is found exactly by dynamic programming over subsets (Selinger),
in O(2^n · n) instead of n! orders.

The model's inputs are measured on the real database, never guessed: each table's row count after its
own constant predicates, and each join edge's selectivity (COUNT(*) of the two filtered tables joined
by their predicates). The SQL of these counts is rendered by us from the query's own syntax tree.
Counts are cached in memory and on disk beside the database's reference results.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from tasks.sqlplan.plan import Scope, _from, _scope_items, _selects
from tasks.sqlplan.workload import Schema, cache_dir


@dataclass(frozen=True)
class JoinGraph:
    """What the cost model needs about one FROM list."""

    refs: tuple[str, ...]
    rows: Mapping[str, float]
    """raw rows of each reference's table (what a scan reads)."""
    card: Mapping[str, float]
    """rows left after the reference's own constant predicates."""
    sel: Mapping[frozenset[str], float] = field(default_factory=dict)
    """edge {a, b} → |a ⋈ b| / (card a · card b), both sides filtered."""
    probe: Mapping[tuple[str, str], bool] = field(default_factory=dict)
    """(a, b) → an index on b's side of the edge lets rows of a find their partners in b."""

    def neighbours(self, ref: str) -> set[str]:
        return {o for e in self.sel if ref in e for o in e if o != ref}


def subset_card(g: JoinGraph, subset: frozenset[str]) -> float:
    """Independence: the product of the filtered cardinalities and of the selectivities inside."""
    c = 1.0
    for r in subset:
        c *= g.card[r]
    for e, s in g.sel.items():
        if e <= subset:
            c *= s
    return c


def step_cost(g: JoinGraph, prefix: frozenset[str], t: str) -> float:
    """Cost of a nested loop adding ``t`` to ``prefix`` (SQLite's shape: scan, index probe or
    automatic index), plus the rows it produces."""
    out = subset_card(g, prefix | {t})
    if not prefix:
        return g.rows[t] + out
    outer = subset_card(g, prefix)
    linked = [a for a in prefix if frozenset((a, t)) in g.sel]
    if not linked:
        return outer * g.rows[t] + out  # a cross product rescans t for each outer row
    probe = math.log2(g.rows[t] + 2.0)
    if any(g.probe.get((a, t), False) for a in linked):
        return outer * probe + out
    return 2.0 * g.rows[t] + outer * probe + out  # SQLite builds an automatic index first


def order_cost(g: JoinGraph, order: Iterable[str]) -> float:
    total, prefix = 0.0, frozenset[str]()
    for t in order:
        total += step_cost(g, prefix, t)
        prefix = prefix | {t}
    return total


def best_order(g: JoinGraph, head: tuple[str, ...] = ()) -> tuple[float, tuple[str, ...]]:
    """The cheapest left-deep order (that starts with ``head``) under ``order_cost``, by DP over subsets.

    best(S ∪ {t}) = min over t of best(S) + step(S, t): the step depends on S only, so the recursion
    is exact. Ties go to the lexicographically smaller order (so the result is deterministic).
    """
    refs = tuple(g.refs)
    index = {r: i for i, r in enumerate(refs)}
    start_cost, start = order_cost(g, head), frozenset(head)
    best: dict[frozenset[str], tuple[float, tuple[int, ...]]] = {
        start: (start_cost, tuple(index[r] for r in head))
    }
    layer = [start]
    for _ in range(len(refs) - len(head)):
        nxt: dict[frozenset[str], tuple[float, tuple[int, ...]]] = {}
        for s in layer:
            c, o = best[s]
            for t in refs:
                if t in s:
                    continue
                cand = (c + step_cost(g, s, t), (*o, index[t]))
                key = s | {t}
                if key not in nxt or cand < nxt[key]:
                    nxt[key] = cand
        best.update(nxt)
        layer = list(nxt)
    c, o = best[frozenset(refs)]
    return c, tuple(refs[i] for i in o)


def ranked_orders(g: JoinGraph) -> list[tuple[float, tuple[str, ...]]]:
    """The DP's best order starting from each reference, cheapest first: the optimum and the best
    alternatives worth measuring exactly (the model is only a model)."""
    found = {best_order(g, (r,)) for r in g.refs}
    return sorted(found)


# -- measuring the graph ---------------------------------------------------------------------------


def _conjuncts(where: exp.Expression | None) -> list[exp.Expression]:
    if where is None:
        return []
    node = where.this if isinstance(where, exp.Where) else where
    return (
        [e for e in node.flatten() if isinstance(e, exp.Expression)] if isinstance(node, exp.And) else [node]
    )


def _strip_parens(e: exp.Expression) -> exp.Expression:
    while isinstance(e, exp.Paren):
        e = e.this
    return e


def split_predicates(
    sel: exp.Select, scope: Scope, schema: Schema
) -> tuple[dict[str, list[exp.Expression]], dict[frozenset[str], list[exp.Expression]]]:
    """This scope's WHERE conjuncts by owner: one reference (local) or two (a join edge).

    Conjuncts with subqueries, outer or ambiguous references, or three owners are left out (the model
    ignores them; the exact measurement does not).
    """
    refs = scope.tables
    local: dict[str, list[exp.Expression]] = {r: [] for r in refs}
    edges: dict[frozenset[str], list[exp.Expression]] = {}
    for c in _conjuncts(sel.args.get("where")):
        c = _strip_parens(c)
        if c.find(exp.Select) is not None:
            continue
        owners: set[str] = set()
        placed = True
        for col in c.find_all(exp.Column):
            if col.table:
                if col.table not in refs:
                    placed = False
                owners.add(col.table)
            else:
                hits = [r for r, t in refs.items() if schema.has_column(t, col.name)]
                if len(hits) != 1:
                    placed = False
                else:
                    owners.add(hits[0])
        if not placed or not owners:
            continue
        if len(owners) == 1:
            local[next(iter(owners))].append(c)
        elif len(owners) == 2:
            edges.setdefault(frozenset(owners), []).append(c)
    return local, edges


def _count_sql(items: list[tuple[str, str]], conds: list[exp.Expression]) -> str:
    tables = [
        exp.Table(this=exp.to_identifier(t), alias=exp.TableAlias(this=exp.to_identifier(r)))
        for r, t in items
    ]
    q = exp.select(exp.Count(this=exp.Star())).from_(tables[0])
    for t in tables[1:]:
        q = q.join(t)
    if conds:
        q = q.where(exp.and_(*(exp.paren(c.copy()) for c in conds)))
    return q.sql(dialect="sqlite")


def _edge_columns(conds: list[exp.Expression], ref: str, table: str, schema: Schema) -> set[str]:
    """Columns of ``ref`` that an equality in the edge compares with the other side."""
    cols: set[str] = set()
    for c in conds:
        for eq in c.find_all(exp.EQ):
            for side in (eq.this, eq.expression):
                if isinstance(side, exp.Column) and (
                    side.table == ref or (not side.table and schema.has_column(table, side.name))
                ):
                    cols.add(side.name)
    return cols


class CardinalityCache:
    """COUNT(*) results by their SQL text, for one database file (in memory and on disk)."""

    def __init__(self, db_key: str) -> None:
        self.path = cache_dir() / "sqlplan-cards" / f"{hashlib.sha256(db_key.encode()).hexdigest()[:24]}.json"
        try:
            self.counts: dict[str, float] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.counts = {}
        self._dirty = False

    def get(self, sql: str, run: Callable[[str], float]) -> float:
        if sql not in self.counts:
            self.counts[sql] = float(run(sql))
            self._dirty = True
        return self.counts[sql]

    def save(self) -> None:
        if not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.counts, sort_keys=True))
            os.replace(tmp, self.path)
            self._dirty = False
        except OSError:
            pass


@dataclass
class ScopeGraph:
    """A scope's measured graph without index knowledge; ``graph(indexed)`` adds the probes."""

    scope: Scope
    rows: dict[str, float]
    card: dict[str, float]
    sel: dict[frozenset[str], float]
    join_cols: dict[tuple[str, str], set[str]]
    """(a, b) → b's columns equated with a's in their edge."""

    def graph(self, leading: Mapping[str, set[str]]) -> JoinGraph:
        """``leading``: table → first columns of its indexes (builtin and current)."""
        probe = {
            (a, b): bool(cols & leading.get(self.scope.tables[b], set()))
            for (a, b), cols in self.join_cols.items()
        }
        return JoinGraph(self.scope.refs, self.rows, self.card, self.sel, probe)


def measure_scope(
    tree: exp.Expression, scope: Scope, schema: Schema, cache: CardinalityCache, run: Callable[[str], float]
) -> ScopeGraph | None:
    """Measure a reorderable scope whose references are all base tables (else None)."""
    if not scope.reorderable or set(scope.tables) != set(scope.refs):
        return None
    sels = [s for s in _selects(tree) if _from(s) is not None]
    sel = sels[scope.id]
    if [i.alias_or_name for i in _scope_items(sel)] != list(scope.refs):
        return None
    local, edges = split_predicates(sel, scope, schema)
    rows, card = {}, {}
    for r, t in scope.tables.items():
        rows[r] = max(1.0, cache.get(_count_sql([(r, t)], []), run))
        card[r] = max(1.0, cache.get(_count_sql([(r, t)], local[r]), run))
    sel_: dict[frozenset[str], float] = {}
    join_cols: dict[tuple[str, str], set[str]] = {}
    for e, conds in sorted(edges.items(), key=lambda kv: sorted(kv[0])):
        a, b = sorted(e)
        n = cache.get(
            _count_sql([(a, scope.tables[a]), (b, scope.tables[b])], local[a] + local[b] + conds), run
        )
        sel_[e] = max(n, 0.5) / (card[a] * card[b])
        join_cols[(a, b)] = _edge_columns(conds, b, scope.tables[b], schema)
        join_cols[(b, a)] = _edge_columns(conds, a, scope.tables[a], schema)
    cache.save()
    return ScopeGraph(scope, rows, card, sel_, join_cols)


def leading_columns(specs: Iterable[Any]) -> dict[str, set[str]]:
    """table → the first column of each index (what a probe by equality can use)."""
    out: dict[str, set[str]] = {}
    for s in specs:
        if not getattr(s, "where", ()):  # a partial index serves only queries that imply its WHERE
            out.setdefault(s.table, set()).add(s.columns[0])
    return out
