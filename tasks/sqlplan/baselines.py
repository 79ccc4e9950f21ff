"""Baselines the user wants beside the result: SQLite's own plans, after ANALYZE, and `.expert` indexes.

All are measured on sandboxes the same way as the agents' plans, so the numbers
are directly comparable: default plans with no extra index; the same after
ANALYZE (on its own sandbox, since statistics change every plan); each query
with its own `.expert` indexes; the union of all of them; and, under a budget,
`.expert` indexes added greedily by measured benefit per byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.sqlplan import expert
from tasks.sqlplan.evaluate import Evaluator, compare_rows
from tasks.sqlplan.indexes import IndexSpec, parse_index_spec
from tasks.sqlplan.plan import DEFAULT_PLAN
from tasks.sqlplan.reference import reference_file
from tasks.sqlplan.sandbox import Sandbox, SandboxError


@dataclass
class Baseline:
    name: str
    per_query: dict[str, int]
    index_bytes: int = 0
    indexes: list[IndexSpec] = field(default_factory=list)
    note: str = ""

    @property
    def total(self) -> int:
        return sum(self.per_query.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "index_bytes": self.index_bytes,
            "per_query": self.per_query,
            "indexes": [i.label() for i in self.indexes],
            "note": self.note,
        }


def default(ev: Evaluator) -> Baseline:
    return Baseline("default", dict(ev.default_cost), note="SQLite's own plans, no extra index")


def analyzed(ev: Evaluator) -> Baseline:
    box = Sandbox(ev.workload.db_path, default_cap=ev.step_cap)
    try:
        box.analyze()
        costs: dict[str, int] = {}
        bad = []
        for q, model in ev.models.items():
            try:
                run = box.query(model.sql, cap=ev.cap_for(q))
                costs[q] = run.cost
                if compare_rows(run.rows, ev.reference[q]):
                    bad.append(q)
            except SandboxError:
                costs[q] = ev.cap_for(q)
                bad.append(q)
    finally:
        box.close()
    return Baseline("analyze", costs, note="after ANALYZE" + (f"; not equivalent: {bad}" if bad else ""))


def expert_specs(ev: Evaluator) -> dict[str, list[IndexSpec]]:
    return {q: expert.recommend(ev.workload.db_path, m.sql, ev.workload.schema) for q, m in ev.models.items()}


def _costs(ev: Evaluator, indexes: frozenset[IndexSpec]) -> dict[str, int]:
    return {q: ev.measure(q, DEFAULT_PLAN, indexes).cost for q in ev.models}


def expert_baselines(ev: Evaluator, specs: dict[str, list[IndexSpec]], budget: int | None) -> list[Baseline]:
    """Per query, union, and greedy-by-benefit-per-byte under ``budget`` (when one is set)."""
    per = {q: ev.measure(q, DEFAULT_PLAN, frozenset(s)).cost for q, s in specs.items()}
    out = [Baseline("expert_per_query", per, note="each query alone with its own .expert indexes")]
    union = frozenset(i for s in specs.values() for i in s)
    out.append(
        Baseline(
            "expert_union",
            _costs(ev, union),
            sum(ev.size(i) for i in union),
            sorted(union),
            note="all .expert indexes together",
        )
    )
    if budget is not None:
        chosen: frozenset[IndexSpec] = frozenset()
        current = _costs(ev, frozenset())
        used = 0
        while True:
            best: tuple[float, IndexSpec, dict[str, int]] | None = None
            for spec in sorted(union - chosen):
                size = ev.size(spec)
                if used + size > budget:
                    continue
                with_spec = frozenset(chosen | {spec})
                trial = dict(current)
                for q in current:
                    # same EXPLAIN QUERY PLAN, same bytecode, same cost: only re-run queries whose plan moves
                    if spec.table in ev.models[q].tables and (
                        ev.signature(q, DEFAULT_PLAN, with_spec) != ev.signature(q, DEFAULT_PLAN, chosen)
                    ):
                        trial[q] = ev.measure(q, DEFAULT_PLAN, with_spec).cost
                gain = sum(current.values()) - sum(trial.values())
                if gain > 0 and (best is None or gain / max(size, 1) > best[0]):
                    best = (gain / max(size, 1), spec, trial)
            if best is None:
                break
            chosen = chosen | {best[1]}
            used += ev.size(best[1])
            current = best[2]
        out.append(
            Baseline(
                "expert_budget",
                current,
                used,
                sorted(chosen),
                note=f"greedy .expert indexes by benefit per byte within {budget / 2**20:.1f} MiB",
            )
        )
    return out


def _cache_file(ev: Evaluator, budget: int | None) -> Path:
    """Baselines depend only on the database file, the queries, the budget and the shell's presence."""
    ref = reference_file(ev.workload, ev.reference_cap)
    return ref.with_name(f"{ref.stem}-baselines-{budget}-{expert.shell() is not None}.json")


def _load(path: Path, ev: Evaluator) -> list[Baseline] | None:
    try:
        data = json.loads(path.read_text())
        return [
            Baseline(
                d["name"],
                d["per_query"],
                d["index_bytes"],
                [parse_index_spec(i, ev.workload.schema) for i in d["indexes"]],
                d["note"],
            )
            for d in data
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def compute(ev: Evaluator, budget: int | None) -> list[Baseline]:
    """All baselines, measured once per (database, queries, budget) and then read from the cache."""
    if expert.shell() is None:
        print(f"sqlplan: {expert.MISSING}")
    path = _cache_file(ev, budget)
    cached = _load(path, ev)
    if cached is not None:
        return cached
    result = [default(ev), analyzed(ev)]
    if expert.shell() is not None:
        result += expert_baselines(ev, expert_specs(ev), budget)
    try:
        path.write_text(
            json.dumps(
                [
                    {
                        "name": b.name,
                        "per_query": b.per_query,
                        "index_bytes": b.index_bytes,
                        "indexes": [i.to_json() for i in b.indexes],
                        "note": b.note,
                    }
                    for b in result
                ]
            )
        )
    except OSError:
        pass
    return result
