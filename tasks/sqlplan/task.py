"""SQLite query planning as a block-optimization task (docs/architecture.md §3 "sqlplan").

State: one plan per query plus the shared set of extra indexes, with each
query's measured outcome carried along so that F and every change are scored
incrementally. A block is a group of queries; its value is their plans plus
index additions/removals. F = Σ query costs + a penalty for every failing
query and for index bytes over the budget (the penalty exceeds any possible
gain, so an infeasible state never beats the start).

One job over 400 lines: the Task interface for one kind; evaluation, plans, indexes and the proposer live in
their own modules.
"""

from __future__ import annotations

import pathlib
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from tasks.base import InvalidProposal, Reference, Task
from tasks.paths import DataPath
from tasks.sqlplan import blind
from tasks.sqlplan.evaluate import Evaluator, QueryOutcome
from tasks.sqlplan.indexes import IndexSpec, parse_index_spec
from tasks.sqlplan.neighbourhoods import NAMES, form_query_blocks
from tasks.sqlplan.plan import DEFAULT_PLAN, QueryPlan, parse_plan
from tasks.sqlplan.prompt import SqlPlanPrompt
from tasks.sqlplan.workload import load_workload

MIB = 2**20


class SqlPlanParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    blocks: int | None = Field(None, ge=1, le=64, description="query groups (default: one per agent)")
    scale: float = Field(0.01, gt=0.0, le=1.0, description="TPC-H scale factor of the generated database")
    db: Annotated[str | None, DataPath()] = Field(
        None, description="your own SQLite database instead of TPC-H"
    )
    queries: Annotated[str | None, DataPath()] = Field(
        None, description="a directory of *.sql files (one statement each)"
    )
    index_budget_mb: float | None = Field(
        None, ge=0.0, description="MiB of extra indexes allowed (none: no limit)"
    )
    step_cap: int = Field(2_000_000, ge=100, description="VM-step cap per query, in units of 1,000 steps")
    reference_cap: int | None = Field(
        None,
        ge=100,
        description="run each original query at most this long (x 1,000 VM steps; default: step_cap); one "
        "that does not finish gets its reference rows from its own SQL with indexes on its '=' columns, "
        "and its default cost is reported as this cap, a lower bound",
    )
    plan_cap_factor: float = Field(
        4.0,
        ge=1.0,
        le=100.0,
        description="a plan that costs more than this times SQLite's own plan of the query is stopped there "
        "and refused (at SF 1 a plan 4x worse than a 300,000-callback default runs for minutes)",
    )
    baselines: bool = Field(True, description="compute the ANALYZE and .expert baselines for the report")
    seed: int = Field(0, ge=0, description="seed for the proposers' sampling")
    screen_scale: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="agents search on the TPC-H database of this smaller scale factor (screening); "
        "every merged change is still measured and checked exactly on the full one",
    )


class SqlPlanProposerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    proposal_seconds: float = Field(10.0, gt=0.0, description="search time per proposal")
    order_samples: int = Field(40, ge=1, description="join orders tried per FROM list and pass")
    use_expert: bool = Field(True, description="add the sqlite3 shell's .expert indexes to the candidates")
    joint_orders: int = Field(
        6, ge=0, description="join orders probed with an index that the current order cannot use"
    )


@dataclass(frozen=True)
class SqlState:
    plans: tuple[QueryPlan, ...]
    indexes: frozenset[IndexSpec]
    outcomes: tuple[QueryOutcome, ...]
    blocks: tuple[tuple[str, ...], ...]
    """query ids per block: the task's partition until a neighbourhood generator re-forms it (same sizes)."""


@dataclass(frozen=True)
class BlockChange:
    plans: dict[str, QueryPlan]
    add: frozenset[IndexSpec]
    drop: frozenset[IndexSpec]


class SqlPlanTask(Task[SqlState, SqlPlanParams]):
    """SQLite query planning: join orders, index hints and a shared index set under a budget."""

    kind = "sqlplan"
    Params = SqlPlanParams
    ProposerParams = SqlPlanProposerParams
    rejection_codes = frozenset(
        {
            "bad_hint",
            "bad_identifier",
            "bad_index",
            "bad_predicate",
            "bad_order",
            "illegal_move",
            "not_equivalent",
            "over_budget",
            "plan_failed",
            "unknown_column",
            "unknown_query",
            "unknown_scope",
            "unknown_table",
        }
    )
    prompt = SqlPlanPrompt
    presets = {"budgeted": {"scale": 0.01, "index_budget_mb": 7.0}}
    # The contract suite's instance. Indexes are frozen (budget 0): an index on lineitem or orders touches
    # nearly every TPC-H query, so with them no two blocks' drafts are disjoint and the suite's
    # "disjoint footprints mean zero interaction" has nothing to check; index changes are checked in
    # tests/tasks/sqlplan/ (incremental = full cost, measured interaction on a shared table).
    example = {
        "blocks": 4,
        "scale": 0.01,
        "index_budget_mb": 0.0,
        "baselines": False,
        "proposal_seconds": 1.0,
        "order_samples": 4,
        "use_expert": False,
    }

    @classmethod
    def team_defaults(cls, agents: int, mode: str = "rounds") -> dict[str, Any]:
        return {"blocks": agents}  # one group of queries per agent

    def run_seed(self) -> int:
        return self.p.seed

    def __init__(self, params: SqlPlanParams) -> None:
        super().__init__(params)
        self.p = params
        self.workload = load_workload(params.db, params.queries, params.scale)
        self.ev = Evaluator(self.workload, params.step_cap, params.reference_cap, params.plan_cap_factor)
        self.qids = list(self.workload.queries)
        self.budget = None if params.index_budget_mb is None else int(params.index_budget_mb * MIB)
        self.default_total = sum(self.ev.default_cost.values())
        readers: dict[str, set[str]] = {}
        for q in self.qids:
            for table in self.ev.models[q].tables:
                readers.setdefault(table, set()).add(q)
        self._readers: dict[str, frozenset[str]] = {t: frozenset(qs) for t, qs in readers.items()}
        """table -> the queries that read it (whose cost an index change on it can alter)."""
        self.penalty = float(self.default_total + 1000)
        n = params.blocks or 4
        self.n = max(1, min(n, len(self.qids)))
        self.block_of: dict[str, int] = {}
        ranked = sorted(self.qids, key=lambda q: (-self.ev.default_cost[q], q))
        for i, q in enumerate(ranked):  # snake order: every block gets a mix of heavy and light queries
            r, k = divmod(i, self.n)
            self.block_of[q] = k if r % 2 == 0 else self.n - 1 - k
        self.block_queries = [[q for q in self.qids if self.block_of[q] == b] for b in range(self.n)]
        self._baselines: list[Any] | None = None
        self._screen: Evaluator | None = None
        self._judge: Evaluator | None = None
        if params.screen_scale is not None and (params.db or params.screen_scale >= params.scale):
            raise ValueError("screen_scale needs the generated TPC-H database and a scale below --scale")

    # -- instance --------------------------------------------------------------
    @property
    def name(self) -> str:
        budget = "nobudget" if self.budget is None else f"{self.p.index_budget_mb:g}MiB"
        return f"sqlplan-{self.workload.name}-{len(self.qids)}q-{budget}"

    @property
    def n_blocks(self) -> int:
        return self.n

    def initial_state(self) -> SqlState:
        plans = tuple(DEFAULT_PLAN for _ in self.qids)
        outcomes = tuple(self.ev.measure(q, DEFAULT_PLAN, ()) for q in self.qids)
        return SqlState(plans, frozenset(), outcomes, self.initial_blocks)

    @property
    def initial_blocks(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(qs) for qs in self.block_queries)

    def block_elements(self, state: SqlState, block: int) -> frozenset[Hashable]:
        """The block's queries in ``state`` (a neighbourhood generator re-forms them). The index set is
        shared: every block may add or drop indexes, so indexes are no block's elements."""
        return frozenset(("query", q) for q in state.blocks[block])

    def written_elements(self, state: SqlState, block: int, value: BlockChange) -> frozenset[Hashable]:
        """The queries the value re-plans (its index changes write the shared index set, no element)."""
        return frozenset(("query", q) for q in value.plans)

    def _owned(self, state: SqlState, changes: Mapping[int, BlockChange]) -> None:
        """A block's value may re-plan only the queries its block holds in ``state`` (blocks can be re-formed,
        so this is checked against the state, not in the stateless ``validate``). The coordinator refuses such
        a value before scoring; this keeps in-process callers of ``apply`` and ``evaluate_change`` honest."""
        for b, ch in changes.items():
            foreign = sorted(set(ch.plans) - set(state.blocks[b]))
            if foreign:
                raise InvalidProposal(
                    f"block {b} holds {list(state.blocks[b])}, not {foreign}", "outside_lease"
                )

    # -- model -----------------------------------------------------------------
    def index_bytes(self, indexes: frozenset[IndexSpec]) -> int:
        return sum(self.ev.size(i) for i in indexes)

    def budget_penalty(self, indexes: frozenset[IndexSpec]) -> float:
        if self.budget is None:
            return 0.0
        over = self.index_bytes(indexes) - self.budget
        return 0.0 if over <= 0 else self.penalty + over / 1024.0

    def _f(self, outcomes: tuple[QueryOutcome, ...], indexes: frozenset[IndexSpec]) -> float:
        fails = sum(1 for o in outcomes if not o.ok)
        return float(sum(o.cost for o in outcomes)) + fails * self.penalty + self.budget_penalty(indexes)

    def objective(self, state: SqlState) -> float:
        return self._f(state.outcomes, state.indexes)

    def full_objective(self, state: SqlState) -> float:
        """F re-measured from scratch, bypassing every cache (for checking the incremental path)."""
        outs = tuple(self.ev.measure(q, p, state.indexes, fresh=True) for q, p in zip(self.qids, state.plans))
        return self._f(outs, state.indexes)

    def _changed(
        self, state: SqlState, changes: Mapping[int, BlockChange]
    ) -> tuple[list[QueryPlan], frozenset[IndexSpec], list[int]]:
        """The plans and index set after ``changes``, and the queries (positions) whose cost they can alter:
        re-planned ones and those on tables whose indexes changed."""
        self._owned(state, changes)
        indexes = set(state.indexes)
        plans = list(state.plans)
        for ch in changes.values():
            indexes -= ch.drop
        for ch in changes.values():
            indexes |= ch.add
        new_idx = frozenset(indexes)
        touched_tables = {i.table for i in state.indexes ^ new_idx}
        for ch in changes.values():
            for q, plan in ch.plans.items():
                plans[self.qids.index(q)] = plan
        touched = [
            k
            for k, q in enumerate(self.qids)
            if plans[k] != state.plans[k] or self.ev.models[q].tables & touched_tables
        ]
        return plans, new_idx, touched

    def apply(self, state: SqlState, changes: Mapping[int, BlockChange]) -> SqlState:
        """Re-measures only re-planned queries and queries on tables whose indexes changed."""
        plans, new_idx, touched = self._changed(state, changes)
        outcomes = list(state.outcomes)
        for k in touched:
            outcomes[k] = self.ev.measure(self.qids[k], plans[k], new_idx)
        return SqlState(tuple(plans), new_idx, tuple(outcomes), state.blocks)

    def screen_change(self, state: SqlState, changes: Mapping[int, BlockChange]) -> float | None:
        """F after ``changes`` predicted on the screening database (``screen_scale``; None without one).

        The queries the change touches are measured on the smaller database under the state's plans and
        indexes and under the changed ones (with their equivalence check there: different rows on any
        database prove a plan wrong); each query's screened gain is scaled by the ratio of its default cost
        on the full database to its default on the screen (the open queries' defaults are their cap). A
        query that fails on the screen costs the penalty; the budget penalty uses the full database's
        index sizes. A query the screen cannot see (``blind.is_blind``: its exact cost far above the
        priced screen's) is measured on the full database, capped: a move that does not at least halve
        it is predicted to leave it as it is. The coordinator merges nothing on this alone:
        ``evaluate_change`` stays exact.
        """
        if self.p.screen_scale is None:
            return None
        plans, new_idx, touched = self._changed(state, changes)
        judge = self._screen_judge()
        gain = self.budget_penalty(state.indexes) - self.budget_penalty(new_idx)
        for k in touched:
            q = self.qids[k]
            old = judge.measure(q, state.plans[k], state.indexes)
            new = judge.measure(q, plans[k], new_idx)
            ratio = self.ev.default_cost[q] / max(1, judge.default_cost[q])
            exact = state.outcomes[k]
            if exact.ok and blind.is_blind(exact.cost, ratio * old.cost):
                gain += self._blind_gain(q, exact.cost, state.plans[k], plans[k], state.indexes, new_idx)
                continue
            gain += ratio * (old.cost - new.cost) + self.penalty * ((not old.ok) - (not new.ok))
        return self.objective(state) - gain

    def _blind_gain(
        self,
        q: str,
        now: float,
        plan: QueryPlan,
        new_plan: QueryPlan,
        indexes: frozenset[IndexSpec],
        new_idx: frozenset[IndexSpec],
    ) -> float:
        """A blind query's gain, measured on the full database with a capped run (0 when the plan is
        unchanged or the run stops at the cap: the exact check before a merge sees the rest)."""
        if self.ev.fast_signature(q, new_plan, new_idx) == self.ev.fast_signature(q, plan, indexes):
            return 0.0
        out = self.ev.measure(q, new_plan, new_idx, cap=blind.probe_cap(now))
        if out.capped:
            return 0.0
        return now - out.cost if out.ok else -self.penalty

    def _screen_judge(self) -> Evaluator:
        """The coordinator's own evaluator on the screening database (the proposers' is another: an
        in-process agent may measure on its own while a round runs)."""
        if self._judge is None:
            assert self.p.screen_scale is not None
            screen = load_workload(None, self.p.queries, self.p.screen_scale)
            self._judge = Evaluator(screen, self.p.step_cap, self.p.reference_cap, self.p.plan_cap_factor)
        return self._judge

    def evaluate_change(self, state: SqlState, changes: Mapping[int, BlockChange]) -> float:
        new = self.apply(state, changes)
        if len(changes) == 1:
            bad = [o.reason for k, o in enumerate(new.outcomes) if not o.ok and state.outcomes[k].ok]
            if bad:
                raise InvalidProposal(bad[0], "not_equivalent" if "equivalent" in bad[0] else "plan_failed")
        return self.objective(new)

    def block_value(self, state: SqlState, block: int) -> BlockChange:
        plans = {q: state.plans[self.qids.index(q)] for q in state.blocks[block]}
        return BlockChange(plans, frozenset(), frozenset())

    def footprint(self, state: SqlState, block: int, value: BlockChange) -> frozenset[Hashable]:
        """The queries whose cost the change can alter, and the budget when it changes the index set.

        An index added or dropped on a table can change the cost of every query that reads that table
        (whichever block owns it); a new plan changes its own query's cost. Tables are not enough: an index
        on ``orders`` and one on ``lineitem`` meet in every query that reads both. The budget penalty is a
        function of the whole index set, so every index change under a budget touches it.
        """
        fp: set[Hashable] = set()
        for index in value.add | value.drop:
            fp |= {("query", q) for q in self._readers.get(index.table, ())}
        for q, plan in value.plans.items():
            if plan != state.plans[self.qids.index(q)]:
                fp.add(("query", q))
        if (value.add or value.drop) and self.budget is not None:
            fp.add(("budget",))
        return frozenset(fp)

    # -- agents' view --------------------------------------------------------------
    def contract(self, state: SqlState, block: int) -> dict[str, Any]:
        mine = list(state.blocks[block])
        tables = sorted({t for q in mine for t in self.ev.models[q].tables})
        readers = {
            t: [
                {"query": q, "cost": state.outcomes[k].cost, "plan": state.plans[k].to_json()}
                for k, q in enumerate(self.qids)
                if q not in mine and t in self.ev.models[q].tables
            ]
            for t in tables
        }
        used = self.index_bytes(state.indexes)
        return {
            "kind": self.kind,
            "workload": self.workload.name,
            "queries": [
                {
                    "query": q,
                    "sql": self.workload.queries[q],
                    "scopes": self.ev.models[q].describe(),
                    "plan": state.plans[self.qids.index(q)].to_json(),
                    "cost": state.outcomes[self.qids.index(q)].cost,
                    "ok": state.outcomes[self.qids.index(q)].ok,
                }
                for q in mine
            ],
            "indexes": [{**i.to_json(), "bytes": self.ev.size(i)} for i in sorted(state.indexes)],
            "index_bytes": used,
            "budget_bytes": self.budget,
            "budget_left_bytes": None if self.budget is None else self.budget - used,
            "correction": {"readers": readers},
            "index_terms": {
                t: {
                    "where": sorted(self.workload.schema.predicates.get(t, ())),
                    "expr": sorted(self.workload.schema.expressions.get(t, ())),
                }
                for t in tables
            },
            "objective": self.objective(state),
            "cost_unit": "progress callbacks per 1,000 SQLite VM steps",
        }

    def validate(self, block: int, value: Any) -> BlockChange:
        if not 0 <= block < self.n:
            raise InvalidProposal(f"block {block} does not exist (0..{self.n - 1})", "wrong_block")
        if not isinstance(value, dict) or set(value) - {"plans", "add", "drop"}:
            raise InvalidProposal("a block value is an object {plans, add, drop}", "bad_shape")
        raw_plans = value.get("plans") or {}
        if not isinstance(raw_plans, dict):
            raise InvalidProposal("plans must map query ids to plans", "bad_shape")
        plans: dict[str, QueryPlan] = {}
        for q, raw in raw_plans.items():
            if q not in self.block_of:
                raise InvalidProposal(f"unknown query {q!r}", "unknown_query")
            plans[q] = parse_plan(raw, self.ev.models[q], self.workload.schema)
        specs: dict[str, frozenset[IndexSpec]] = {}
        for key in ("add", "drop"):
            raw = value.get(key) or []
            if not isinstance(raw, list) or len(raw) > 64:
                raise InvalidProposal(f"{key} must be a list of at most 64 index specs", "bad_shape")
            specs[key] = frozenset(parse_index_spec(r, self.workload.schema) for r in raw)
        for spec in specs["add"]:
            if spec in self.ev.builtin:
                raise InvalidProposal(f"{spec.label()} already exists (primary key)", "illegal_move")
            problem = self._index_problem(spec)
            if problem:
                raise InvalidProposal(problem, "bad_index")
        if specs["add"] & specs["drop"]:
            raise InvalidProposal("an index is both added and dropped", "bad_shape")
        if self.budget is not None and sum(self.ev.size(i) for i in specs["add"]) > self.budget:
            raise InvalidProposal("the added indexes alone exceed the index budget", "over_budget")
        return BlockChange(plans, specs["add"], specs["drop"])

    def _index_problem(self, spec: IndexSpec) -> str:
        """Whether the index can be built. Screening without a budget asks the screening database: building
        each proposed index on the full one (seconds to minutes at SF 1) is exact work on proposals that
        may never merge; an index the full database cannot build fails the exact check of any merge that
        adds it (its queries' outcomes say why). With a budget the full size is needed, so it is built."""
        if self.p.screen_scale is not None and self.budget is None:
            return self._screen_judge().index_problem(spec)
        return self.ev.index_problem(spec)

    def encode_value(self, value: BlockChange) -> dict[str, Any]:
        return {
            "plans": {q: p.to_json() for q, p in value.plans.items()},
            "add": [i.to_json() for i in sorted(value.add)],
            "drop": [i.to_json() for i in sorted(value.drop)],
        }

    def reference(self) -> Reference:
        """A valid lower bound: no plan can cost less than zero progress callbacks."""
        return Reference(
            0.0, "lower_bound", method="no plan costs fewer than zero progress callbacks", proven=True
        )

    def feasible(self, state: SqlState) -> bool:
        within = self.budget is None or self.index_bytes(state.indexes) <= self.budget
        return within and all(o.ok for o in state.outcomes)

    def scale(self) -> float:
        return float(self.default_total)

    # -- persistence -------------------------------------------------------------
    def dump_state(self, state: SqlState) -> dict[str, Any]:
        return {
            "plans": {q: p.to_json() for q, p in zip(self.qids, state.plans)},
            "indexes": [i.to_json() for i in sorted(state.indexes)],
            "blocks": [list(b) for b in state.blocks],
        }

    def load_state(self, data: Any) -> SqlState:
        plans = tuple(
            parse_plan(data["plans"].get(q), self.ev.models[q], self.workload.schema) for q in self.qids
        )
        idx = frozenset(parse_index_spec(r, self.workload.schema) for r in data["indexes"])
        blocks = self.initial_blocks
        if data.get("blocks") is not None:
            blocks = tuple(tuple(str(q) for q in b) for b in data["blocks"])
            if sorted(q for b in blocks for q in b) != sorted(self.qids) or len(blocks) != self.n:
                raise ValueError("the stored blocks are not a partition of the queries into n blocks")
        outcomes = tuple(self.ev.measure(q, p, idx) for q, p in zip(self.qids, plans))
        return SqlState(plans, idx, outcomes, blocks)

    # -- neighbourhoods (adaptive block selection) -------------------------------
    def neighbourhoods(self) -> tuple[str, ...]:
        return NAMES

    def form_blocks(
        self, state: SqlState, generator: str, size: float, attempt: int, keep: frozenset[int] = frozenset()
    ) -> SqlState | None:
        """Re-forms all blocks or none: with blocks to ``keep`` (adaptive selection's ``hold``) it keeps them
        all, since the generators deal every query at once."""
        if keep:
            return None
        cost = {q: o.cost for q, o in zip(self.qids, state.outcomes, strict=True)}
        tables = {q: self.ev.models[q].tables for q in self.qids}
        blocks = form_query_blocks(state.blocks, cost, tables, generator, size, attempt)
        return None if blocks is None else replace(state, blocks=blocks)

    # -- output --------------------------------------------------------------------
    def baselines(self) -> list[Any]:
        if self._baselines is None:
            from tasks.sqlplan import baselines

            print("sqlplan: measuring baselines (ANALYZE, .expert) ...", flush=True)
            self._baselines = (
                baselines.compute(self.ev, self.budget) if self.p.baselines else [baselines.default(self.ev)]
            )
        return self._baselines

    def known_baselines(self) -> list[Any]:
        from tasks.sqlplan import baselines

        return self._baselines if self._baselines is not None else [baselines.default(self.ev)]

    def solution(self, state: SqlState) -> dict[str, Any]:
        from tasks.sqlplan.report import solution

        return solution(self, state)

    def view_model(self, state: SqlState) -> dict[str, Any]:
        """The per-query costs against the baselines measured so far, and the index set against its budget."""
        from tasks.sqlplan.report import solution

        return {k: v for k, v in solution(self, state).items() if k != "plans"}

    @classmethod
    def view_renderer(cls) -> pathlib.Path:
        return pathlib.Path(__file__).with_name("view.js")

    def pictures(self, state: SqlState, stem: str) -> list[str]:
        from tasks.sqlplan.report import write_query_reports

        return write_query_reports(self, state, stem)

    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> Any:
        from tasks.sqlplan.proposer import SqlPlanProposer

        k = SqlPlanProposerParams.model_validate(knobs.model_dump())
        if self.p.screen_scale is not None and self._screen is None:
            screen = load_workload(None, self.p.queries, self.p.screen_scale)
            self._screen = Evaluator(screen, self.p.step_cap, self.p.reference_cap, self.p.plan_cap_factor)
        return SqlPlanProposer(self, k, seed=self.p.seed * 7919 + seed, ev=self._screen)
