"""Measuring one query under one plan and one index set, with equivalence checking and a cache.

A query's cost depends only on its plan and on the indexes of the tables it
reads, so results are cached under (query, plan, relevant index set): scoring
a proposal re-runs only the queries it re-plans or whose tables gain or lose an
index. Capped probes (a proposer trying an order with "stop once it is worse
than the best so far") are remembered as lower bounds, never as costs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tasks.sqlplan import partial
from tasks.sqlplan.indexes import IndexSpec, rebuilds
from tasks.sqlplan.plan import DEFAULT_PLAN, QueryModel, QueryPlan, parse_query, render
from tasks.sqlplan.reference import compare_rows as compare_rows
from tasks.sqlplan.reference import equality_indexes, load_reference, store_reference
from tasks.sqlplan.sandbox import Sandbox, SandboxError, StepCapExceeded
from tasks.sqlplan.shadow import ShadowPlanner
from tasks.sqlplan.workload import Workload

PROBE_CAPPED = "stopped at the probe's step cap"


@dataclass(frozen=True)
class QueryOutcome:
    cost: int
    """progress callbacks (x 1,000 VM steps); the step cap when the run failed."""
    seconds: float
    ok: bool
    reason: str = ""

    @property
    def capped(self) -> bool:
        """The run was stopped at a probe's cap: it costs more than the cap, how much is unknown."""
        return self.reason == PROBE_CAPPED


class Evaluator:
    """A sandbox plus everything measured on it, for one workload.

    ``reference_cap`` (x 1,000 VM steps, default: ``step_cap``) bounds the run of each original query. An
    original query that does not finish within it (at SF 1, SQLite's own plans for q17, q20 and q22 are
    nested scans of ~10^8 callbacks: hours) is *open*: its reference rows come from the same SQL text run
    with single-column indexes on the columns its predicates compare with '=' (an index never changes what
    a query returns, only how SQLite finds it; ``reference_source`` says which), and its default cost is
    the cap, a lower bound. The original SQL of an open query stays a valid plan under any index set: a run
    of it that stops at the cap counts as the cap (a lower bound, verified by the run), every other plan
    must finish within the cap to count.
    """

    def __init__(
        self, workload: Workload, step_cap: int, reference_cap: int | None = None, cap_factor: float = 4.0
    ) -> None:
        self.workload = workload
        self.cap_factor = cap_factor
        self.step_cap = step_cap
        self.reference_cap = reference_cap
        self.sandbox = Sandbox(workload.db_path, default_cap=step_cap)
        self.models: dict[str, QueryModel] = {
            q: parse_query(q, sql, workload.schema) for q, sql in workload.queries.items()
        }
        workload.schema.predicates.update(partial.catalogue(self.models.values(), workload.schema))
        workload.schema.expressions.update(
            partial.expression_catalogue(self.models.values(), workload.schema)
        )
        self.builtin: dict[IndexSpec, str] = {
            IndexSpec(t, cols, tuple("BINARY" for _ in cols), u): name
            for name, (t, cols, u) in workload.schema.builtin_indexes.items()
        }
        self._present: set[IndexSpec] = set()
        self._order: dict[str, list[IndexSpec]] = {}
        self._sizes: dict[IndexSpec, int] = {}
        self._bad_index: dict[IndexSpec, str] = {}
        self._cache: dict[tuple[Any, ...], QueryOutcome] = {}
        self._floor: dict[tuple[Any, ...], int] = {}
        self._sql: dict[tuple[str, Any], str] = {}
        self.runs = 0
        self.reused = 0
        self.mispruned = 0
        """measurements where the schema-only plan named other indexes than SQLite's (then all are built)."""
        """measurements answered by an earlier run of the same SQLite plan (EXPLAIN QUERY PLAN)."""
        self._by_plan: dict[tuple[Any, ...], QueryOutcome] = {}
        self._shadow: ShadowPlanner | None = None
        self.reference: dict[str, list[tuple[Any, ...]]] = {}
        self.default_cost: dict[str, int] = {}
        self.reference_source: dict[str, str] = {}
        """open query -> the equivalent plan whose rows are its reference (see the class docstring)."""
        stored = load_reference(workload, reference_cap)
        cap = step_cap if reference_cap is None else min(step_cap, reference_cap)
        for q, model in self.models.items():
            if q in stored:
                rows, cost, source = stored[q]
                self.reference[q], self.default_cost[q] = rows, cost
                if source:
                    self.reference_source[q] = source
                self._cache[self._key(q, DEFAULT_PLAN, frozenset())] = QueryOutcome(cost, 0.0, True)
                continue
            try:
                run = self.sandbox.query(model.sql, cap=cap)
            except StepCapExceeded:
                self.reference[q], self.reference_source[q] = self._equivalent_rows(q, cap)
                self.default_cost[q] = cap
                self._cache[self._key(q, DEFAULT_PLAN, frozenset())] = QueryOutcome(cap, 0.0, True)
                continue
            except SandboxError as exc:
                raise ValueError(f"{q}: the original query does not run: {exc.reason}") from None
            self.reference[q] = run.rows
            self.default_cost[q] = run.cost
            self._cache[self._key(q, DEFAULT_PLAN, frozenset())] = QueryOutcome(run.cost, run.seconds, True)
        if set(stored) != set(self.models):
            store_reference(workload, reference_cap, self.reference, self.default_cost, self.reference_source)
        for q in self.models:
            out = self._cache[self._key(q, DEFAULT_PLAN, frozenset())]
            self._by_plan[(q, DEFAULT_PLAN.key(), self.signature(q, DEFAULT_PLAN, frozenset()))] = out

    @property
    def open_default(self) -> frozenset[str]:
        """Queries whose original SQL did not finish within the reference cap (default cost = a lower bound)."""
        return frozenset(self.reference_source)

    def _equivalent_rows(self, qid: str, cap: int) -> tuple[list[tuple[Any, ...]], str]:
        """The original SQL's rows from the same text with indexes on its '=' columns (see the class doc)."""
        model = self.models[qid]
        specs = equality_indexes(model, self.workload, self.builtin)
        reason = self._sync(specs, model.tables)
        label = "the original SQL with " + ", ".join(i.label() for i in sorted(specs))
        if reason:
            raise ValueError(f"{qid}: the original query does not finish and {reason}")
        try:
            run = self.sandbox.query(model.sql, cap=10 * cap)
        except SandboxError as exc:
            raise ValueError(
                f"{qid}: the original query stops at the reference cap ({cap} x 1,000 steps) and "
                f"{label} does not finish either: {exc.reason}"
            ) from None
        finally:
            self._sync(frozenset(), model.tables)
        return run.rows, label

    def clear_cache(self) -> None:
        """Forget every measured outcome (both the per-index-set cache and the per-plan reuse)."""
        self._cache.clear()
        self._by_plan.clear()

    # -- indexes ------------------------------------------------------------
    def relevant(self, qid: str, indexes: Iterable[IndexSpec]) -> frozenset[IndexSpec]:
        tables = self.models[qid].tables
        return frozenset(i for i in indexes if i.table in tables and i not in self.builtin)

    def _sync(self, want: frozenset[IndexSpec], tables: frozenset[str]) -> str:
        """Make the sandbox's indexes on ``tables`` exactly ``want`` (``indexes.rebuilds``: in sorted order,
        so a cost is a function of the index set); '' or why an index cannot exist."""
        for step in rebuilds(self._order, want, tables):
            if step.drop:
                self.sandbox.ddl(i.drop_sql() for i in step.drop)
                self._present.difference_update(step.drop)
            self._order[step.table] = step.keep
            for i in step.create:
                if i in self._bad_index:
                    return self._bad_index[i]
                try:
                    self.sandbox.ddl([i.create_sql()])
                except SandboxError as exc:
                    self._bad_index[i] = f"index {i.label()} cannot be created: {exc.reason}"
                    return self._bad_index[i]
                self._present.add(i)
                self._order[step.table].append(i)
                if i not in self._sizes:
                    self._sizes[i] = self.sandbox.object_bytes(i.name)
        return ""

    def size(self, spec: IndexSpec) -> int:
        """Bytes of the index's b-tree (measured once, on the sandbox)."""
        if spec in self.builtin:
            return 0
        if spec not in self._sizes and spec not in self._bad_index:
            self._sync(frozenset(self._present | {spec}), frozenset())
        return self._sizes.get(spec, 0)

    def index_problem(self, spec: IndexSpec) -> str:
        """'' when the index can be built (e.g. a UNIQUE index over duplicate values cannot)."""
        if spec in self.builtin:
            return ""
        self.size(spec)
        return self._bad_index.get(spec, "")

    # -- queries --------------------------------------------------------------
    def _key(self, qid: str, plan: QueryPlan, rel: frozenset[IndexSpec]) -> tuple[Any, ...]:
        return (qid, plan.key(), rel)

    def cached(self, qid: str, plan: QueryPlan, indexes: Iterable[IndexSpec]) -> QueryOutcome | None:
        return self._cache.get(self._key(qid, plan, self.relevant(qid, indexes)))

    def sql(self, qid: str, plan: QueryPlan) -> str:
        """The rendered SQL of a plan (memoized: rendering copies the syntax tree)."""
        key = (qid, plan.key())
        if key not in self._sql:
            self._sql[key] = render(self.models[qid], plan, self.builtin)
        return self._sql[key]

    def cap_for(self, qid: str) -> int:
        """The most a plan may cost: a plan ``cap_factor`` times worse than SQLite's own is no plan (an open
        query's plans must finish within the reference cap, its default cost)."""
        if qid in self.reference_source:
            return self.default_cost[qid]
        return min(self.step_cap, int(self.cap_factor * self.default_cost[qid]) + 1000)

    def measure(
        self,
        qid: str,
        plan: QueryPlan,
        indexes: Iterable[IndexSpec],
        cap: int | None = None,
        *,
        fresh: bool = False,
    ) -> QueryOutcome:
        """Cost of ``qid`` under ``plan`` with ``indexes``; ``cap`` stops a probe early (not cached as a cost).

        Exact without always running: when SQLite's EXPLAIN QUERY PLAN under ``indexes`` equals that of
        an index set already measured in full (an added index the plan does not use), the program and
        so its VM steps and rows are the same, and the earlier outcome is the answer. Indexes the plan
        does not use are not even built: the schema-only planner (``shadow.py``) names the ones it uses,
        the measurement is made (and cached) under those alone, and SQLite's own plan under them must be
        the one named, else every index is built after all. ``fresh`` runs with every index.
        """
        rel_all = self.relevant(qid, indexes)
        rel = rel_all if fresh else self._used(qid, plan, rel_all)
        key = self._key(qid, plan, rel)
        if not fresh and key in self._cache:
            return self._cache[key]
        full_cap = self.cap_for(qid)
        limit = full_cap if cap is None else min(cap, full_cap)
        if not fresh and self._floor.get(key, -1) >= limit:
            return QueryOutcome(limit + 1, 0.0, False, PROBE_CAPPED)
        model = self.models[qid]
        reason = self._sync(rel, model.tables)
        sig = None if fresh or reason else self.signature(qid, plan, rel)
        if sig is not None and rel != rel_all and sig != self.fast_signature(qid, plan, rel_all):
            self.mispruned += 1  # the schema-only plan was not SQLite's: measure with every index
            rel, key = rel_all, self._key(qid, plan, rel_all)
            if key in self._cache:
                return self._cache[key]
            reason = self._sync(rel, model.tables)
            sig = None if reason else self.signature(qid, plan, rel)
        if reason:
            out = QueryOutcome(full_cap, 0.0, False, reason)
            self._cache[key] = out
            return out
        same = None if sig is None else self._by_plan.get((qid, plan.key(), sig))
        if same is not None:  # SQLite runs the same plan: same steps, same rows (checked when it ran)
            self.reused += 1
            self._cache[key] = same
            return same
        return self._run(qid, plan, key, sig, limit, fresh)

    def _run(
        self, qid: str, plan: QueryPlan, key: tuple[Any, ...], sig: Any, limit: int, fresh: bool
    ) -> QueryOutcome:
        """Run the plan on the synced sandbox, check its rows, and remember the outcome (unless ``fresh``)."""
        full_cap = self.cap_for(qid)
        sql = self.sql(qid, plan)
        self.runs += 1
        try:
            run = self.sandbox.query(sql, cap=limit)
        except StepCapExceeded:
            if limit < full_cap:
                self._floor[key] = max(self._floor.get(key, -1), limit)
                return QueryOutcome(limit + 1, 0.0, False, PROBE_CAPPED)
            if qid in self.reference_source and plan == DEFAULT_PLAN:
                # the original SQL returns the reference rows under any index set; its cost here is at
                # least the cap (this run verified it), which is also its default's lower bound
                out = QueryOutcome(full_cap, 0.0, True, "original SQL stopped at the reference cap")
                self._cache[key] = out
                return out
            out = QueryOutcome(
                full_cap, 0.0, False, f"{qid}: plan exceeds the step cap ({full_cap} x 1,000 VM steps)"
            )
            self._cache[key] = out
            return out
        except SandboxError as exc:
            out = QueryOutcome(full_cap, 0.0, False, f"{qid}: plan fails: {exc.reason}")
            self._cache[key] = out
            return out
        diff = compare_rows(run.rows, self.reference[qid])
        out = QueryOutcome(
            run.cost, run.seconds, not diff, f"{qid}: plan is not equivalent: {diff}" if diff else ""
        )
        if not fresh:
            self._cache[key] = out
            if sig is not None:
                self._by_plan[(qid, plan.key(), sig)] = out
        return out

    def _used(self, qid: str, plan: QueryPlan, rel: frozenset[IndexSpec]) -> frozenset[IndexSpec]:
        """The indexes of ``rel`` that the schema-only plan of ``qid`` names, if without the others the plan
        stays the same (an unused index can still steer the join order: the planner's search is not
        exhaustive); else all of ``rel`` (and all if one cannot be built)."""
        if not rel or any(i in self._bad_index for i in rel):
            return rel
        steps = self.fast_signature(qid, plan, rel)
        used = frozenset(i for i in rel if any(i.name in step for step in steps))
        return used if used == rel or self.fast_signature(qid, plan, used) == steps else rel

    def signature(self, qid: str, plan: QueryPlan, indexes: Iterable[IndexSpec]) -> tuple[str, ...]:
        """SQLite's EXPLAIN QUERY PLAN for the rendered query: same signature, same bytecode, same cost.

        Lets a proposer predict that an index leaves another query alone for the
        price of a prepare instead of a run. (The only text added to our own
        rendered SQL is the fixed EXPLAIN prefix.)
        """
        rel = self.relevant(qid, indexes)
        key = ("sig", qid, plan.key(), rel)
        if key not in self._cache:
            model = self.models[qid]
            if self._sync(rel, model.tables):
                sig: tuple[str, ...] = ("<no index>",)
            else:
                try:
                    rows = self.sandbox.con.execute("EXPLAIN QUERY PLAN " + self.sql(qid, plan))
                    sig = tuple(f"{r[1]}|{r[-1]}" for r in rows.fetchall())
                except Exception as exc:  # noqa: BLE001 - a failing plan has its own signature
                    sig = (f"<error {exc}>",)
            self._cache[key] = sig  # type: ignore[assignment]
        return self._cache[key]  # type: ignore[return-value]

    def fast_signature(self, qid: str, plan: QueryPlan, indexes: Iterable[IndexSpec]) -> tuple[str, ...]:
        """``signature`` as planned on a schema-only copy (``shadow.py``): no index is built on the data.
        For a proposer's skipping only; reusing a measurement needs the real ``signature``."""
        rel = self.relevant(qid, indexes)
        key = ("fsig", qid, plan.key(), rel)
        if key not in self._cache:
            if any(i in self._bad_index for i in rel):
                sig: tuple[str, ...] = ("<no index>",)
            else:
                if self._shadow is None:
                    self._shadow = ShadowPlanner(self.workload.db_path)
                sig = self._shadow.signature(self.sql(qid, plan), rel, self.models[qid].tables)
            self._cache[key] = sig  # type: ignore[assignment]
        return self._cache[key]  # type: ignore[return-value]
