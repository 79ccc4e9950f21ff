"""The heuristic proposer: greedy index moves and sampled join orders, measured on the sandbox.

Surrogate = the block's query costs + the measured change in cost of the other
queries that read a table whose indexes it changes (the contract's correction
data names them and their plans) + the budget penalty. It is measured, not
modelled, so the predicted improvement is exact unless another block changes
the same tables in the same round. In one process the proposers share the
task's evaluator: costs are deterministic, so a cost measured once is the cost.

One job over 400 lines: one heuristic search, its phases (indexes, join orders, hints) in the order they
run.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Mapping
from typing import Any, cast

import sqlglot
from sqlglot import exp

from tasks.base import Draft, Proposer
from tasks.sqlplan import blind, expert, joinorder, knapsack, partial
from tasks.sqlplan.indexes import _IDENT, MAX_INDEX_COLUMNS, IndexSpec, parse_index_spec
from tasks.sqlplan.plan import DEFAULT_PLAN, QueryModel, QueryPlan, Scope, parse_plan


def predicate_columns(model: QueryModel, schema: Any) -> dict[str, tuple[set[str], set[str]]]:
    """table → (columns compared with '=' or IN, all columns in a WHERE/ON/HAVING): index key candidates."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    tables = model.tables

    def note(col: exp.Column, eq: bool) -> None:
        for t in tables:
            if schema.has_column(t, col.name):
                eqs, alls = out.setdefault(t, (set(), set()))
                alls.add(col.name)
                if eq:
                    eqs.add(col.name)

    for node in model.tree.find_all(exp.Where, exp.Join, exp.Having):
        for cmp in node.find_all(exp.EQ, exp.In):
            for col in (cmp.this, cmp.args.get("expression")):
                if isinstance(col, exp.Column):
                    note(col, True)
        for col in node.find_all(exp.Column):
            note(col, False)
    return out


def referenced_columns(model: QueryModel, schema: Any) -> dict[str, set[str]]:
    """table → every column of it the query mentions anywhere (what a covering index must hold)."""
    out: dict[str, set[str]] = {}
    for col in model.tree.find_all(exp.Column):
        for t in model.tables:
            if schema.has_column(t, col.name):
                out.setdefault(t, set()).add(col.name)
    return out


def sqlglot_columns(term: str) -> list[exp.Column]:
    """The columns of one of our own rendered terms."""
    return list(sqlglot.parse_one(term, read="sqlite").find_all(exp.Column))


def group_columns(model: QueryModel) -> list[str]:
    """Column names of the query's GROUP BY clauses, in their written order."""
    return [
        c.name for g in model.tree.find_all(exp.Group) for e in g.expressions for c in e.find_all(exp.Column)
    ]


class SqlPlanProposer(Proposer):
    def __init__(self, task: Any, knobs: Any, seed: int = 0, ev: Any = None) -> None:
        self.task = task
        self.ev = task.ev if ev is None else ev
        self.screening = self.ev is not task.ev
        """searching on a smaller database (screening): costs are the screen's, never the contract's."""
        self.weights: dict[str, float] = (
            {q: task.ev.default_cost[q] / max(1, self.ev.default_cost[q]) for q in self.ev.models}
            if self.screening
            else {}
        )
        """per query, full-database cost per unit of screen cost (the ratio of its two defaults, as the
        coordinator's screen scales it): queries grow unevenly with the data (q17 and q20 quadratically),
        so summing raw screen costs across queries would trade them at the wrong prices."""
        self.knobs = knobs
        self.rng = random.Random(seed)
        self._candidates: dict[str, list[IndexSpec]] = {}
        self._expert: dict[str, set[IndexSpec]] = {}
        self._hint_plans: dict[tuple[str, frozenset[IndexSpec]], QueryPlan] = {}
        self.calls = 0
        self._base: frozenset[IndexSpec] | None = None
        self._known: dict[str, float] = {}
        self._graphs: dict[tuple[str, int], joinorder.ScopeGraph | None] = {}
        self._cards: joinorder.CardinalityCache | None = None
        self._blind: dict[str, float] = {}
        """screening, the queries the screen cannot see (their exact cost now, from the contract): q17
        at SF 0.1 costs 1.34 M, and 0 on SF 0.01, where no part matches its brand and container. They
        are measured on the full database instead, each probe capped (``blind.probe_cap``)."""

    # -- candidates ------------------------------------------------------------
    def candidates(self, qid: str) -> list[IndexSpec]:
        if qid not in self._candidates:
            schema = self.task.workload.schema
            model = self.ev.models[qid]
            found: set[IndexSpec] = set()
            first: list[IndexSpec] = []
            if self.knobs.use_expert and expert.shell() is not None:
                first = expert.recommend(self.ev.workload.db_path, model.sql, schema)
            self._expert[qid] = set(first)
            for table, (eqs, cols) in predicate_columns(model, schema).items():
                for c in sorted(cols):
                    found.add(parse_index_spec({"table": table, "columns": [c]}, schema))
                for a in sorted(eqs):  # equality column first, then any other predicate column
                    for c in sorted(cols - {a}):
                        found.add(parse_index_spec({"table": table, "columns": [a, c]}, schema))
            used = referenced_columns(model, schema)
            for table, (eqs, cols) in predicate_columns(model, schema).items():
                # covering: the predicate columns first, then every other column the query reads from
                # the table, so SQLite answers from the index alone (no table lookups)
                rest = sorted(used.get(table, set()) - eqs - cols)
                keys = sorted(eqs) + sorted(cols - eqs)
                if rest and len(keys) + len(rest) <= MAX_INDEX_COLUMNS:
                    found.add(parse_index_spec({"table": table, "columns": keys + rest}, schema))
                # and GROUP BY columns first, so the grouping reads the index in order (no sorter)
                grouped = [c for c in group_columns(model) if schema.has_column(table, c)]
                if grouped:
                    cover = list(dict.fromkeys(grouped + keys + sorted(used.get(table, set()))))
                    if len(cover) <= MAX_INDEX_COLUMNS:
                        found.add(parse_index_spec({"table": table, "columns": cover}, schema))
            parts = [i for i in self.partial_candidates(qid) if i not in found]
            # indexes that store the query's expressions, and partial ones (small: they pay most per
            # byte), then .expert's picks, then single columns, then pairs: likeliest wins first
            ranked = sorted(found - set(first), key=lambda i: (len(i.columns), i))
            self._candidates[qid] = [
                i for i in dict.fromkeys(parts + first + ranked) if i not in self.ev.builtin
            ]
        return self._candidates[qid]

    def partial_candidates(self, qid: str) -> list[IndexSpec]:
        """Partial indexes whose WHERE is all of one table reference's constant terms in this query
        (so the query implies it): keyed by the reference's equality/join columns, then covering
        the other columns the query reads (GROUP BY columns first when grouped), or keys alone; and
        covering indexes that also store the query's arithmetic expressions (read, not recomputed)."""
        schema = self.task.workload.schema
        model = self.ev.models[qid]
        eqs_of = {t: eqs for t, (eqs, _) in predicate_columns(model, schema).items()}
        used = referenced_columns(model, schema)
        exprs_of = partial.table_expressions(model, schema)
        out: list[IndexSpec] = []
        for (sid, ref), terms in sorted(partial.constant_terms(model, schema).items()):
            table = model.scopes[sid].tables[ref]
            where = sorted(set(terms))
            term_cols = {c.name for t in terms for c in sqlglot_columns(t)}
            keys = sorted(eqs_of.get(table, set()) - term_cols)
            rest = sorted(used.get(table, set()) - set(keys))
            grouped = [c for c in group_columns(model) if schema.has_column(table, c)]
            exprs: list[Any] = [{"expr": e} for e in exprs_of.get((sid, ref), [])[:2]]
            shapes: list[list[Any]] = [
                keys + rest,
                list(dict.fromkeys(grouped + keys + rest)),
                keys,
                keys + sorted(term_cols),
            ]
            if exprs:
                head = list(dict.fromkeys(grouped + keys))
                shapes.append(head + exprs + [c for c in rest if c not in head])
            for cols in shapes:
                cols = cols[:MAX_INDEX_COLUMNS]
                if cols:
                    spec = parse_index_spec({"table": table, "columns": cols, "where": where}, schema)
                    out.append(spec)
        # the same expression-carrying covering index without a WHERE (for queries with no constant terms)
        for (sid, ref), texts in sorted(exprs_of.items()):
            table = model.scopes[sid].tables[ref]
            grouped = [c for c in group_columns(model) if schema.has_column(table, c)]
            keys = sorted(eqs_of.get(table, set()))
            head = list(dict.fromkeys(grouped + keys))
            rest = sorted(used.get(table, set()) - set(head))
            cols = (head + [{"expr": e} for e in texts[:2]] + rest)[:MAX_INDEX_COLUMNS]
            out.append(parse_index_spec({"table": table, "columns": cols}, schema))
        # those storing expressions first (they save work on every row), then by fewest columns
        return sorted(
            dict.fromkeys(out), key=lambda i: (all(_IDENT.match(c) for c in i.columns), len(i.columns))
        )

    # -- surrogate -----------------------------------------------------------------
    def _ev_of(self, qid: str) -> Any:
        """The evaluator the query is searched on: the screen, or the full database if it is blind."""
        return self.task.ev if qid in self._blind else self.ev

    def _measure(self, qid: str, plan: QueryPlan, idx: frozenset[IndexSpec], cap: int | None = None) -> Any:
        if qid in self._blind:  # the full database: only moves that pay at least half stay affordable
            limit = blind.probe_cap(self._blind[qid])
            cap = limit if cap is None else min(cap, limit)
        return self._ev_of(qid).measure(qid, plan, idx, cap=cap)

    def _cost(self, qid: str, plan: QueryPlan, idx: frozenset[IndexSpec]) -> float:
        """The query's measured cost on the searched database (compare it only with the same query's)."""
        o = self._measure(qid, plan, idx)
        if o.capped:  # a blind query's move that does not pay half: as good as now, for all we know
            return self._blind[qid]
        return o.cost if o.ok else o.cost + self.task.penalty

    def _weight(self, qid: str) -> float:
        return 1.0 if qid in self._blind else self.weights.get(qid, 1.0)

    def _find_blind(
        self, known: Mapping[str, float], plans: Mapping[str, QueryPlan], base: frozenset[IndexSpec]
    ) -> None:
        """Screening: the queries whose exact cost now is far above what the screen predicts for them."""
        self._blind = {}
        if not self.screening:
            return
        for q, exact in known.items():
            if blind.is_blind(exact, self._full_cost(q, plans[q], base)):
                self._blind[q] = exact

    def _full_cost(self, qid: str, plan: QueryPlan, idx: frozenset[IndexSpec]) -> float:
        """The cost in full-database units: what sums across queries and ranks them."""
        return self._weight(qid) * self._cost(qid, plan, idx)

    def _best_plan(self, qid: str, plan: QueryPlan, idx: frozenset[IndexSpec]) -> tuple[float, QueryPlan]:
        """The cheaper of the current plan and SQLite's own plan under ``idx``."""
        best = (self._cost(qid, plan, idx), plan)
        for other in (DEFAULT_PLAN, self._hint_plans.get((qid, idx))):
            if other is not None and other != plan:
                c = self._cost(qid, other, idx)
                if c < best[0]:
                    best = (c, other)
        return best

    def _others(self, others: dict[str, QueryPlan], idx: frozenset[IndexSpec], changed: set[str]) -> float:
        """Cost of the other blocks' queries on the changed tables under ``idx``.

        A query whose EXPLAIN QUERY PLAN is unchanged keeps its cost (read from
        the contract), so only the queries whose plan moves are re-run.
        """
        total = 0.0
        for q, p in others.items():
            if not self.ev.models[q].tables & changed:
                continue
            if self._base is not None and self.ev.fast_signature(q, p, idx) == self.ev.fast_signature(
                q, p, self._base
            ):
                total += self._known.get(q, 0.0)
            else:
                total += self._full_cost(q, p, idx)
        return total

    def _surrogate(
        self,
        mine: dict[str, QueryPlan],
        others: dict[str, QueryPlan],
        idx: frozenset[IndexSpec],
        base_idx: frozenset[IndexSpec],
    ) -> tuple[float, dict[str, QueryPlan]]:
        changed = {i.table for i in idx ^ base_idx}
        plans, own = {}, 0.0
        for q, p in mine.items():
            c, plans[q] = self._best_plan(q, p, idx)
            own += self._weight(q) * c
        return own + self._others(others, idx, changed) + self.task.budget_penalty(idx), plans

    # -- join orders -------------------------------------------------------------------
    def _graph(self, qid: str, scope: Scope) -> joinorder.ScopeGraph | None:
        """The scope's join graph with measured cardinalities (counted once, cached on disk)."""
        key = (qid, scope.id)
        if key not in self._graphs:
            if self._cards is None:
                db = self.ev.workload.db_path
                st = db.stat()
                self._cards = joinorder.CardinalityCache(f"{db}|{st.st_size}|{st.st_mtime_ns}")

            def count(sql: str) -> float:
                return float(self.ev.sandbox.query(sql, cap=10**9).rows[0][0])

            try:
                self._graphs[key] = joinorder.measure_scope(
                    self.ev.models[qid].tree, scope, self.task.workload.schema, self._cards, count
                )
            except Exception:  # noqa: BLE001 - a count that cannot run leaves the scope to sampling
                self._graphs[key] = None
        return self._graphs[key]

    def _dp_orders(
        self, qid: str, scope: Scope, idx: frozenset[IndexSpec], head: tuple[str, ...] = ()
    ) -> list[tuple[str, ...]] | None:
        """Orders by DP under the index set ``idx`` (cheapest model cost first), None without a graph."""
        sg = self._graph(qid, scope)
        if sg is None:
            return None
        g = sg.graph(joinorder.leading_columns([*self.ev.builtin, *idx]))
        if head:
            return [joinorder.best_order(g, head)[1]]
        return [o for _, o in joinorder.ranked_orders(g)]

    def _orders(
        self, qid: str, scope: Scope, current: tuple[str, ...] | None, idx: frozenset[IndexSpec]
    ) -> list[tuple[str, ...]]:
        """The DP's orders first (its optimum, then its best from each starting table), then adjacent
        swaps of the current order; every permutation too when there are at most 4 tables. Random
        connected orders only for scopes the DP cannot model (a subquery or CTE in the FROM list)."""
        refs = scope.refs
        found: list[tuple[str, ...]] = self._dp_orders(qid, scope, idx) or []
        if current:
            for i in range(len(current) - 1):
                sw = list(current)
                sw[i], sw[i + 1] = sw[i + 1], sw[i]
                found.append(tuple(sw))
        if len(refs) <= 4:
            found += list(itertools.permutations(refs))
        elif self._graph(qid, scope) is None:
            adj = _join_graph(scope)
            for _ in range(self.knobs.order_samples * 3):
                found.append(self._connected_order([self.rng.choice(refs)], scope, adj))
                if len(set(found)) >= self.knobs.order_samples:
                    break
        return list(dict.fromkeys(found))

    def _joint_probe(self, q: str, c: IndexSpec, trial: frozenset[IndexSpec], now: float) -> float:
        """An index that pays off only under another join order: try a few orders that reach its
        table early (capped at the current cost, so the bad ones stop at once)."""
        best = now
        for scope in self.ev.models[q].scopes:
            refs = [r for r, t in scope.tables.items() if t == c.table]
            if not scope.reorderable or not refs:
                continue
            for order in self._orders_through(q, scope, refs[0], trial)[: self.knobs.joint_orders]:
                plan = QueryPlan(((scope.id, order),), ())
                o = self._measure(q, plan, trial, cap=int(best))
                if o.ok and o.cost < best:
                    best = o.cost
                    self._hint_plans[(q, trial)] = plan
        return best

    def _orders_through(
        self, qid: str, scope: Scope, ref: str, idx: frozenset[IndexSpec]
    ) -> list[tuple[str, ...]]:
        """Orders that reach ``ref`` first or second (right after one of its join partners), each
        completed by the DP (at random when the scope has no measured graph)."""
        adj = _join_graph(scope)
        heads = [[n, ref] for n in sorted(adj[ref])] + [[ref]]
        out: list[tuple[str, ...]] = []
        for head in heads:
            dp = self._dp_orders(qid, scope, idx, tuple(head))
            out.append(dp[0] if dp else self._connected_order(head, scope, adj))
        return list(dict.fromkeys(out))

    def _connected_order(self, head: list[str], scope: Scope, adj: dict[str, set[str]]) -> tuple[str, ...]:
        """``head`` extended at random, each next table joined to one already placed (when any is)."""
        order, left = list(head), set(scope.refs) - set(head)
        while left:
            near = sorted(r for r in left if adj[r] & set(order)) or sorted(left)
            nxt = self.rng.choice(near)
            order.append(nxt)
            left.discard(nxt)
        return tuple(order)

    def _improve_orders(
        self, qid: str, plan: QueryPlan, idx: frozenset[IndexSpec], deadline: float
    ) -> tuple[float, QueryPlan]:
        best_cost, best = self._best_plan(qid, plan, idx)
        model = self.ev.models[qid]
        for scope in model.scopes:
            if not scope.reorderable:
                continue
            current = dict(best.orders).get(scope.id)
            indexed = {i.table for i in idx}
            through = [
                o
                for r, t in sorted(scope.tables.items())
                if t in indexed
                for o in self._orders_through(qid, scope, r, idx)
            ]
            for order in list(dict.fromkeys(self._orders(qid, scope, current, idx) + through)):
                if time.monotonic() > deadline:
                    return best_cost, best
                orders = dict(best.orders)
                orders[scope.id] = order
                trial = QueryPlan(tuple(sorted(orders.items())), best.hints)
                o = self._measure(qid, trial, idx, cap=int(best_cost))
                if o.ok and o.cost < best_cost:
                    best_cost, best = float(o.cost), trial
        return best_cost, best

    def _improve_hints(
        self, qid: str, plan: QueryPlan, idx: frozenset[IndexSpec], deadline: float
    ) -> tuple[float, QueryPlan]:
        """Per table reference, try ``NOT INDEXED`` and ``INDEXED BY`` each index on its table (the
        task's and the file's own), one reference at a time, keeping what lowers the measured cost.
        A hint SQLite cannot honour fails the run ("no query solution") and is simply not kept."""
        best_cost, best = self._best_plan(qid, plan, idx)
        model = self.ev.models[qid]
        on_table: dict[str, list[IndexSpec | None]] = {}
        for spec in sorted(idx | set(self.ev.builtin)):
            on_table.setdefault(spec.table, []).append(spec)
        for scope in model.scopes:
            for ref, table in sorted(scope.tables.items()):
                current = {(s, r): i for s, r, i in best.hints}
                options: list[IndexSpec | None] = [None, *on_table.get(table, [])]
                for option in options:
                    if time.monotonic() > deadline:
                        return best_cost, best
                    if (scope.id, ref) in current and current[(scope.id, ref)] == option:
                        continue
                    hints = {**current, (scope.id, ref): option}
                    trial = QueryPlan(
                        best.orders,
                        tuple(sorted(((s, r, i) for (s, r), i in hints.items()), key=lambda h: (h[0], h[1]))),
                    )
                    o = self._measure(qid, trial, idx, cap=int(best_cost))
                    if o.ok and o.cost < best_cost:
                        best_cost, best = float(o.cost), trial
        return best_cost, best

    # -- the search ------------------------------------------------------------------------
    def _accept(self, trial: frozenset[IndexSpec], state: dict[str, Any]) -> bool:
        """Move to ``trial`` when the surrogate (own + others' change + budget) decreases."""
        s, plans = self._surrogate(state["plans"], state["others"], trial, state["base"])
        s -= self._others(state["others"], state["base"], {i.table for i in trial ^ state["base"]})
        if s < state["best"] - 0.5:
            state.update(best=s, idx=trial, plans=plans)
            return True
        return False

    def _index_pass(self, mine: list[str], state: dict[str, Any], deadline: float) -> None:
        """Candidates in tiers (.expert's, single columns, pairs), heaviest query first within a tier:
        a candidate whose EXPLAIN QUERY PLAN does not change is skipped for free, one that does is
        probed with a step cap (losers stop early), and a winner is kept only if the whole surrogate
        (own + others' change + budget) agrees. Then drops that do not hurt."""
        tiers: list[list[tuple[str, IndexSpec]]] = [[], [], []]
        for q in sorted(mine, key=lambda q: -self._full_cost(q, state["plans"][q], state["idx"])):
            parts = set(self.partial_candidates(q))
            for c in self.candidates(q):
                tier = 0 if c in self._expert.get(q, ()) or c in parts else min(len(c.columns), 2)
                tiers[tier].append((q, c))
        ordered = [(q, c) for tier in tiers for q, c in tier]
        # a blind query's candidates go first, every tier: its probes are slow (full database), and its
        # cost is by definition large and invisible to the rest of the pass
        ordered.sort(key=lambda x: x[0] not in self._blind)  # stable: tiers kept within each part
        singles = [(q, frozenset([c])) for q, c in ordered]
        budgeted = self.task.budget is not None
        # Without a budget, take each winner at once (first improvement). Under a budget, probe
        # first and then spend the bytes greedily by the probed gain per byte.
        bundles = [] if budgeted else [(q, frozenset(self._expert[q])) for q in mine if self._expert.get(q)]
        winners: list[tuple[float, frozenset[IndexSpec]]] = []
        winner_sizes: list[int] = []
        winner_queries: list[str] = []
        probe_deadline = deadline - 0.2 * self.knobs.proposal_seconds if budgeted else deadline

        def probe(q: str, add: frozenset[IndexSpec], frac: float) -> bool:
            """Measure ``add`` for ``q`` capped at ``frac`` of its cost now; True when it is a winner."""
            idx = state["idx"]
            if add <= idx:
                return True
            if budgeted and self.task.index_bytes(add) > (self.task.budget or 0):
                return True  # can never fit: not worth a run (nor a second pass)
            trial = idx | add
            now = self._cost(q, state["plans"][q], idx)
            if now <= 0:
                return True
            cap = max(1, int(now * frac))
            best = now
            for plan in {state["plans"][q], DEFAULT_PLAN}:
                ev = self._ev_of(q)
                if ev.fast_signature(q, plan, trial) != ev.fast_signature(q, plan, idx):
                    out = self._measure(q, plan, trial, cap=cap)
                    if out.ok:  # a run stopped at the cap reports cap + 1: no cost, not a winner
                        best = min(best, out.cost)
            if best >= now and len(add) == 1 and frac >= 1.0:
                best = self._joint_probe(q, next(iter(add)), trial, now)
            if best >= now:
                return False
            if budgeted:
                size = max(1, sum(self.task.ev.size(i) for i in add))
                winners.append((self._weight(q) * (now - best) / size, add))
                winner_sizes.append(size)
                winner_queries.append(q)
            else:
                self._accept(trial, state)
            return True

        # Two passes: first every candidate capped at half its query's cost (the big wins, fast:
        # a loser on a heavy query stops early), then the rest at the full cost, with join-order probes.
        rest: list[tuple[str, frozenset[IndexSpec]]] = []
        for q, add in bundles + singles:
            if time.monotonic() > probe_deadline:
                break
            if not probe(q, add, 0.5):
                rest.append((q, add))
        for q, add in rest:
            if time.monotonic() > probe_deadline:
                break
            probe(q, add, 1.0)
        left: list[frozenset[IndexSpec]] = []
        if budgeted and winners:
            # CP-SAT picks the subset that fits the bytes left; the rest follow by gain per byte
            room = (self.task.budget or 0) - self.task.index_bytes(state["idx"])
            items = [
                knapsack.Item(add, int(gain * size), size, group=q)
                for (gain, add), size, q in zip(winners, winner_sizes, winner_queries, strict=True)
            ]
            picked = knapsack.choose(
                items, room, seconds=min(1.0, max(0.2, (deadline - time.monotonic()) / 4))
            )
            by_gain = [add for _, add in sorted(winners, key=lambda w: -w[0])]
            order = list(dict.fromkeys([*(cast("frozenset[IndexSpec]", key) for key in picked), *by_gain]))
        else:
            order = [add for _, add in sorted(winners, key=lambda w: -w[0])]
        for add in order:
            if time.monotonic() > deadline:
                left += [a for a in order if not a <= state["idx"] and a not in left]
                break
            if not add <= state["idx"] and not self._accept(state["idx"] | add, state):
                left.append(add)
        if budgeted and left:
            self._repack(state, winners, winner_sizes, winner_queries, deadline)
        # Budget full: swap one of the largest indexes out for one of the best that did not fit.
        for add in left[:3]:
            for old in sorted(state["idx"], key=lambda i: -self.task.ev.size(i))[:4]:
                if time.monotonic() > deadline:
                    return
                if not add <= state["idx"] and self._accept((state["idx"] - {old}) | add, state):
                    break
        # ... or as many of the weakest as the winner worth most in all needs (one large index may serve
        # the queries of several small ones: only the exact surrogate sees that).
        if budgeted and left:
            worth = {add: gain * size for (gain, add), size in zip(winners, winner_sizes, strict=True)}
            fits = [add for add in left if self.task.index_bytes(add) <= (self.task.budget or 0)]
            for add in sorted(fits, key=lambda add: -worth.get(add, 0.0))[:2]:
                if time.monotonic() > deadline:
                    return
                if not add <= state["idx"] and self._accept(self._make_room(add, state), state):
                    break
        tables = {t for q in mine for t in self.ev.models[q].tables}
        for i in sorted(state["idx"]):
            if time.monotonic() > deadline:
                return
            if i.table in tables:
                self._accept(state["idx"] - {i}, state)

    def _present_values(self, state: dict[str, Any]) -> dict[IndexSpec, float]:
        """Each present index valued cheaply: the gains so far of the queries whose SQLite plan uses it
        (EXPLAIN QUERY PLAN names it); an index no plan uses is worth 1. Exact checks follow."""
        plans = {**state["others"], **state["plans"]}
        values: dict[IndexSpec, float] = {}
        for i in sorted(state["idx"]):
            value = 1.0
            for q, p in plans.items():
                if i.table in self.ev.models[q].tables and any(
                    i.name in step for step in self._ev_of(q).fast_signature(q, p, state["idx"])
                ):
                    gain = self.task.ev.default_cost[q] - self._full_cost(q, p, state["idx"])
                    value += max(0.0, gain)
            values[i] = value
        return values

    def _make_room(self, add: frozenset[IndexSpec], state: dict[str, Any]) -> frozenset[IndexSpec]:
        """``add`` with the present indexes worth least per byte evicted until it fits the budget.

        The knapsacks value each index by the queries using it now, so they cannot see that a large
        new index would also serve the queries of the small ones it evicts (lineitem(l_partkey) at
        SF 0.1 answers q17 and q20; q20's own index holds the bytes). The exact surrogate can: the
        caller accepts the move only if it agrees."""
        values = self._present_values(state)
        keep = set(state["idx"] | add)
        over = self.task.index_bytes(frozenset(keep)) - (self.task.budget or 0)
        for i in sorted(state["idx"] - add, key=lambda i: values[i] / max(1, self.task.ev.size(i))):
            if over <= 0:
                break
            keep.discard(i)
            over -= self.task.ev.size(i)
        return frozenset(keep)

    def _repack(
        self,
        state: dict[str, Any],
        winners: list[tuple[float, frozenset[IndexSpec]]],
        sizes: list[int],
        queries: list[str],
        deadline: float,
    ) -> None:
        """The whole index set as one knapsack: each present index is an item worth the gains of the
        queries whose plans use it, each probed winner one worth its measured gain; CP-SAT picks the
        best set within the budget, and the move is kept only if the exact surrogate agrees. Lets a
        large, valuable index displace several small, weak ones."""
        late = deadline + 0.3 * self.knobs.proposal_seconds  # the repack may overrun its phase a little
        items = [
            knapsack.Item(frozenset([i]), int(value), self.task.ev.size(i))
            for i, value in self._present_values(state).items()
        ]
        for (gain, add), size, q in zip(winners, sizes, queries, strict=True):
            if not add <= state["idx"]:
                items.append(knapsack.Item(add, int(gain * size), size, group=q))
        picked = knapsack.choose(
            items, self.task.budget or 0, seconds=min(1.0, max(0.2, (deadline - time.monotonic()) / 4))
        )
        chosen = (
            frozenset().union(*(cast("frozenset[IndexSpec]", k) for k in picked)) if picked else frozenset()
        )
        if chosen != state["idx"] and time.monotonic() < late:
            self._accept(chosen, state)

    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        data = contract["data"]
        block = int(contract["block"])
        deadline = time.monotonic() + self.knobs.proposal_seconds
        schema = self.task.workload.schema
        mine = {
            q["query"]: parse_plan(q["plan"], self.ev.models[q["query"]], schema) for q in data["queries"]
        }
        others: dict[str, QueryPlan] = {}
        for readers in data["correction"]["readers"].values():
            for r in readers:
                others[r["query"]] = parse_plan(r["plan"], self.ev.models[r["query"]], schema)
        base = frozenset(
            parse_index_spec({k: v for k, v in i.items() if k != "bytes"}, schema) for i in data["indexes"]
        )
        self._base = None if self.screening else base
        self._known = {
            r["query"]: float(r["cost"])
            for rs in data["correction"]["readers"].values()
            for r in rs
            if not self.screening
        }
        self._find_blind(
            {
                **{q["query"]: float(q["cost"]) for q in data["queries"]},
                **{r["query"]: float(r["cost"]) for rs in data["correction"]["readers"].values() for r in rs},
            },
            {**others, **mine},
            base,
        )
        start, _ = self._surrogate(mine, {}, base, base)
        state: dict[str, Any] = {
            "plans": dict(mine),
            "others": others,
            "base": base,
            "idx": base,
            "best": start,
        }
        qids = list(mine)
        self.calls += 1
        # Alternate which comes first, so that an index that only pays off under a new join order
        # (and an order that only pays off with a new index) is found within two proposals.
        phases = ["index", "orders"] if self.calls % 2 else ["orders", "index"]
        for phase in phases:
            if phase == "index":
                self._index_pass(
                    qids, state, min(deadline, time.monotonic() + 0.6 * self.knobs.proposal_seconds)
                )
            else:
                for q in sorted(qids, key=lambda q: -self._full_cost(q, state["plans"][q], state["idx"])):
                    if time.monotonic() > deadline:
                        break
                    _, state["plans"][q] = self._improve_orders(q, state["plans"][q], state["idx"], deadline)
                for q in sorted(qids, key=lambda q: -self._full_cost(q, state["plans"][q], state["idx"])):
                    if time.monotonic() > deadline:
                        break
                    _, state["plans"][q] = self._improve_hints(q, state["plans"][q], state["idx"], deadline)
        idx = state["idx"]
        final, plans = self._surrogate(state["plans"], others, idx, base)
        final -= self._others(others, base, {i.table for i in idx ^ base})
        if final >= start - 0.5:
            return None
        value = {
            "plans": {q: p.to_json() for q, p in plans.items() if p != mine[q]},
            "add": [i.to_json() for i in sorted(idx - base)],
            "drop": [i.to_json() for i in sorted(base - idx)],
        }
        return Draft(
            block=block,
            value=value,
            predicted_improvement=start - final,  # full-database units, screened or not
            info={"indexes": len(idx), "runs": self.ev.runs},
        )


def _join_graph(scope: Scope) -> dict[str, set[str]]:
    """Each table reference of the scope -> the references it has a join predicate with."""
    adj: dict[str, set[str]] = {r: set() for r in scope.refs}
    for a, b in scope.joins:
        adj[a].add(b)
        adj[b].add(a)
    return adj
