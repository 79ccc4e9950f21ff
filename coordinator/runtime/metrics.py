"""Prometheus metrics (prefix ``blockopt_``) on an injected registry.

Task state (proposals, merges, constants, leases, usage) is read from the
store at scrape time by ``TaskStateCollector``, so the numbers are the same
whichever replica or worker is scraped. Only durations, which are facts about
this process, are per-process histograms. Label values are bounded: tasks by
``max_tasks`` (running first, then newest), agents by ``max_agents`` (the rest
summed as ``other``), rejection reasons by the engine's codes and those the installed kinds declare.

One job over 400 lines: the metric definitions and the collector that reads task state from the store
belong together, so a series' name and where its value comes from sit side by side.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from coordinator.engine import adaptive
from coordinator.engine import forecast as fc
from coordinator.engine.records import RoundRecord
from coordinator.status import TaskStatus
from coordinator.store.base import TERMINAL, Store, TaskRuntime, TaskSpec, UsageRow
from tasks.registry import rejection_codes

ENGINE_REASONS = frozenset(
    {
        "invalid_proposal",
        "wrong_block",
        "outside_lease",
        "future_base",
        "stale_base",
        "stale_footprint",
        "not_improving",
        "not_selected",
        "combination_worse",
        "screen_not_improving",
        "screen_not_selected",
        "screen_not_checked",
        "task_finished",
    }
)
"""Rejections the coordinator itself makes; each installed kind declares its own (``Task.rejection_codes``)."""
REASONS = ENGINE_REASONS | rejection_codes()
STATUSES = tuple(s.value for s in TaskStatus)
FORECAST_GAUGES = {
    "limit": "Estimated limit F-hat-infinity of the objective",
    "remaining": "Forecast improvement still to come (F_t - F-hat-infinity)",
    "eta_rounds": "Forecast rounds to relative gap epsilon (or to within epsilon of the limit)",
    "eta_seconds": "Forecast seconds to relative gap epsilon (or to within epsilon of the limit)",
    "gain_per_1k_tokens": "Forecast improvement over the next rounds per 1,000 tokens",
    "gain_per_agent_second": "Forecast improvement over the next rounds per agent-second",
    "predicted_gap": "One-step forecast of the next round's gap (upper bound at the stated coverage)",
    "consecutive_misses": "Rounds in a row whose gap ended above its own one-step forecast",
}


@dataclass
class TaskSample:
    task: str
    kind: str
    status: str
    mode: str
    counters: dict[str, float]
    objective: float
    gap: float
    kappa: float | None
    gamma: float | None
    delta: float | None
    leases_active: int
    budget_used: dict[str, float] = field(default_factory=dict)
    """budget name -> fraction spent, for the budgets the task has (alert: budget nearly spent)."""
    forecast: dict[str, float | None] = field(default_factory=dict)
    """FORECAST_GAUGES name -> value (None: unknown, not exported)."""
    neighbourhoods: dict[str, tuple[float | None, float]] = field(default_factory=dict)
    """Adaptive selection: generator -> (weight, size); empty under lease order."""
    elapsed: float = 0.0
    """Seconds since the task was created (to its end once it ended): the x-axis of its anytime curve."""
    agent_seconds: float = 0.0
    """Seconds its agents reported in their usage so far (proposals and abandoned leases)."""


@dataclass
class MetricsSnapshot:
    tasks: list[TaskSample] = field(default_factory=list)
    status_counts: dict[str, int] = field(default_factory=dict)
    usage: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    """(agent, model) -> (tokens, calls), already capped."""


class TaskStateCollector(Collector):
    def __init__(self) -> None:
        self.snapshot = MetricsSnapshot()

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        tasks = GaugeMetricFamily("blockopt_tasks", "Tasks by status", labels=["status"])
        for status in STATUSES:
            tasks.add_metric([status], snap.status_counts.get(status, 0))
        yield tasks

        def counter(name: str, doc: str, key: str) -> CounterMetricFamily:
            fam = CounterMetricFamily(name, doc, labels=["task"])
            for t in snap.tasks:
                fam.add_metric([t.task], t.counters.get(key, 0.0))
            return fam

        yield counter("blockopt_proposals_received", "Proposals stored (acknowledged)", "received")
        yield counter("blockopt_proposals_accepted", "Proposals merged", "accepted")
        yield counter(
            "blockopt_proposals_repaired",
            "Proposals merged as the kind's repair on the head (blocks merged after their base were in the way)",
            "repaired",
        )
        yield counter(
            "blockopt_proposals_rebased",
            "Proposals merged on a head newer than their base (scored again there: still improving)",
            "rebased",
        )
        yield counter(
            "blockopt_interference_edges", "Interference-graph edges among improving proposals", "edges"
        )
        yield counter("blockopt_rounds", "Rounds recorded", "rounds")
        yield counter(
            "blockopt_regroups", "Empty rounds after which the task regrouped its blocks", "regroups"
        )
        yield counter("blockopt_leases_granted", "Leases granted", "leases_granted")
        weight = GaugeMetricFamily(
            "blockopt_neighbourhood_weight",
            "Adaptive selection's current weight of each neighbourhood generator (UCB1 index or ALNS weight; "
            "an untried UCB1 arm is not exported)",
            labels=["task", "generator"],
        )
        size = GaugeMetricFamily(
            "blockopt_neighbourhood_size",
            "Adaptive selection's neighbourhood size of each generator (fraction of a block)",
            labels=["task", "generator"],
        )
        for t in snap.tasks:
            for gen, (w, sz) in t.neighbourhoods.items():
                if w is not None:
                    weight.add_metric([t.task, gen], w)
                size.add_metric([t.task, gen], sz)
        yield weight
        yield size
        yield counter(
            "blockopt_leases_expired", "Leases that lapsed because the agent went silent", "leases_expired"
        )

        rejected = CounterMetricFamily(
            "blockopt_proposals_rejected", "Proposals rejected, by reason", labels=["task", "reason"]
        )
        merges = CounterMetricFamily(
            "blockopt_merges",
            "Merges by kind (level: the objective kept, the head moved with a search)",
            labels=["task", "kind"],
        )
        prior = CounterMetricFamily(
            "blockopt_a_priori_checks",
            "Rounds checked against the kind's a priori bound",
            labels=["task", "result"],
        )
        one_step = CounterMetricFamily(
            "blockopt_forecast_checks",
            "Rounds scored against their one-step forecast",
            labels=["task", "result"],
        )
        for t in snap.tasks:
            by_reason: dict[str, float] = {}
            for key, value in t.counters.items():
                if key.startswith("rejected:"):
                    reason = key.split(":", 1)[1]
                    reason = reason if reason in REASONS else "other"
                    by_reason[reason] = by_reason.get(reason, 0.0) + value
            for reason, value in sorted(by_reason.items()):
                rejected.add_metric([t.task, reason], value)
            for kind in ("independent", "checked_combination", "level"):
                merges.add_metric([t.task, kind], t.counters.get(f"merges:{kind}", 0.0))
            for result in ("held", "failed", "precondition_failed"):
                prior.add_metric([t.task, result], t.counters.get(f"a_priori_{result}", 0.0))
            one_step.add_metric([t.task, "hit"], t.counters.get("forecast_hits", 0.0))
            one_step.add_metric([t.task, "miss"], t.counters.get("forecast_misses", 0.0))
        yield rejected
        yield merges
        yield prior
        yield one_step
        yield counter(
            "blockopt_accounting_violations",
            "Rounds whose books did not balance (a bug: see the log)",
            "accounting_violations",
        )
        for name, doc in FORECAST_GAUGES.items():
            fam = GaugeMetricFamily(f"blockopt_forecast_{name}", doc, labels=["task"])
            for t in snap.tasks:
                v = t.forecast.get(name)
                if v is not None and math.isfinite(v):
                    fam.add_metric([t.task], float(v))
            yield fam

        gauges = {
            "objective": GaugeMetricFamily("blockopt_objective", "Current objective F", labels=["task"]),
            "gap": GaugeMetricFamily("blockopt_gap", "Current gap F - F_ref", labels=["task"]),
            "kappa": GaugeMetricFamily(
                "blockopt_kappa", "Block progress kappa of the last merging round", labels=["task"]
            ),
            "gamma": GaugeMetricFamily(
                "blockopt_gamma", "Combination efficiency gamma of the last merging round", labels=["task"]
            ),
            "delta": GaugeMetricFamily(
                "blockopt_delta", "Correction error delta of the last merging round", labels=["task"]
            ),
            "leases": GaugeMetricFamily("blockopt_leases_active", "Leases currently held", labels=["task"]),
            "elapsed": GaugeMetricFamily(
                "blockopt_task_elapsed_seconds",
                "Seconds since the task was created (to its end once it ended)",
                labels=["task"],
            ),
            "agent_seconds": GaugeMetricFamily(
                "blockopt_task_agent_seconds",
                "Agent-seconds the task's agents reported in their usage (proposals and abandoned leases)",
                labels=["task"],
            ),
        }
        info = GaugeMetricFamily(
            "blockopt_task_info", "Task labels (value 1)", labels=["task", "kind", "status", "mode"]
        )
        for t in snap.tasks:
            values = {
                "objective": t.objective,
                "gap": t.gap,
                "kappa": t.kappa,
                "gamma": t.gamma,
                "delta": t.delta,
                "leases": float(t.leases_active),
                "elapsed": t.elapsed,
                "agent_seconds": t.agent_seconds,
            }
            for key, fam in gauges.items():
                v = values[key]
                if v is not None and math.isfinite(v):
                    fam.add_metric([t.task], v)
            info.add_metric([t.task, t.kind, t.status, t.mode], 1.0)
        yield from gauges.values()
        yield info

        budget = GaugeMetricFamily(
            "blockopt_budget_used_ratio",
            "Fraction of each task budget spent (1 = spent)",
            labels=["task", "budget"],
        )
        for t in snap.tasks:
            for name, used in sorted(t.budget_used.items()):
                budget.add_metric([t.task, name], used)
        yield budget

        tokens = CounterMetricFamily(
            "blockopt_agent_tokens", "Tokens reported by agents", labels=["agent", "model"]
        )
        calls = CounterMetricFamily(
            "blockopt_agent_calls", "Proposer calls reported by agents", labels=["agent", "model"]
        )
        for (agent, model), (tok, cal) in sorted(snap.usage.items()):
            tokens.add_metric([agent, model], tok)
            calls.add_metric([agent, model], cal)
        yield tokens
        yield calls


class ServiceMetrics:
    """Everything the service exports; built on the registry it is given."""

    def __init__(
        self, registry: CollectorRegistry, max_tasks: int = 50, max_agents: int = 100, max_models: int = 20
    ) -> None:
        self.registry = registry
        self.max_tasks = max_tasks
        self.max_agents = max_agents
        self.max_models = max_models
        buckets = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
        self.round_seconds = Histogram(
            "blockopt_round_duration_seconds",
            "Wall time of one round (engine + store commit), this process",
            ["mode"],
            buckets=buckets,
            registry=registry,
        )
        self.scoring_seconds = Histogram(
            "blockopt_scoring_duration_seconds",
            "Objective evaluations inside a round, this process",
            ["mode"],
            buckets=buckets,
            registry=registry,
        )
        self.state = TaskStateCollector()
        registry.register(self.state)
        self.cache_sizes: Callable[[], dict[str, int]] | None = None
        """Set by the service: its per-task caches, by name."""
        self._bandits: dict[str, adaptive.Bandit] = {}
        """Adaptive selection per exported task, brought up to date at each scrape (``_neighbourhoods``)."""
        self.asyncio_tasks = Gauge(
            "blockopt_asyncio_tasks", "asyncio tasks alive in this process (at scrape)", registry=registry
        )
        self.store_records = Gauge(
            "blockopt_store_records",
            "Records the store holds (SQLite rows, Redis keys under the prefix, memory "
            "records); -1 when the store cannot count them",
            registry=registry,
        )
        self.cached = Gauge(
            "blockopt_service_cached",
            "Entries in this process's per-task caches",
            ["cache"],
            registry=registry,
        )

    async def refresh(self, store: Store, now: float) -> None:
        """Read task state from the store (called by /metrics right before rendering)."""
        self.asyncio_tasks.set(len(asyncio.all_tasks()))
        records = await store.record_count()
        self.store_records.set(-1 if records is None else records)
        if self.cache_sizes is not None:
            for name, size in self.cache_sizes().items():
                self.cached.labels(name).set(size)
        specs = await store.list_tasks()
        runtimes = {s.id: await store.get_runtime(s.id) for s in specs}
        status_counts: dict[str, int] = {}
        for rt in runtimes.values():
            status_counts[rt.status] = status_counts.get(rt.status, 0) + 1
        ordered = sorted(specs, key=lambda s: (runtimes[s.id].status in TERMINAL, -s.created_at))
        samples: list[TaskSample] = []
        usage: dict[tuple[str, str], tuple[float, float]] = {}
        agents_seen: set[str] = set()
        models_seen: set[str] = set()
        for spec in ordered[: self.max_tasks]:
            rt = runtimes[spec.id]
            rows = await store.usage(spec.id)
            head = await store.get_head(spec.id)
            last = await store.rounds(spec.id, since=max(0, rt.round - 2 * fc.DEFAULT_WINDOW - 2))
            merging = [r.record for r in last if r.record.accepted]
            rec = merging[-1] if merging else None
            samples.append(
                TaskSample(
                    task=spec.id,
                    kind=spec.kind,
                    status=rt.status,
                    mode=spec.mode,
                    counters=await store.counters(spec.id),
                    objective=head.objective,
                    gap=head.objective - spec.reference,
                    kappa=rec.kappa if rec else None,
                    gamma=rec.gamma if rec else None,
                    delta=rec.delta if rec else None,
                    leases_active=len(await store.active_leases(spec.id, now)),
                    budget_used=_budget_used(spec, rt, rows, now),
                    forecast=_forecast(spec, rt, [r.record for r in last], rows, now),
                    neighbourhoods=await self._neighbourhoods(store, spec),
                    elapsed=(rt.finished_at if rt.finished_at is not None else now) - spec.created_at,
                    agent_seconds=sum(r.usage.seconds for r in rows),
                )
            )
            for row in rows:
                agent = (
                    row.agent if (row.agent in agents_seen or len(agents_seen) < self.max_agents) else "other"
                )
                model = (
                    row.model if (row.model in models_seen or len(models_seen) < self.max_models) else "other"
                )
                agents_seen.add(agent)
                models_seen.add(model)
                tok, cal = usage.get((agent, model), (0.0, 0.0))
                usage[(agent, model)] = (tok + row.usage.tokens, cal + row.usage.calls)
        exported = {sample.task for sample in samples}
        for gone in set(self._bandits) - exported:
            del self._bandits[gone]
        self.state.snapshot = MetricsSnapshot(samples, status_counts, usage)

    async def _neighbourhoods(self, store: Store, spec: TaskSpec) -> dict[str, tuple[float | None, float]]:
        """The task's adaptive selection as the service holds it, replayed from its stored rounds. Kept per
        task between scrapes, so a scrape reads only the rounds since the last one, not all of them."""
        bandit = self._bandits.get(spec.id)
        if bandit is None:
            bandit = adaptive.bandit_of(spec.selection, spec.neighbourhoods)
            if bandit is None or spec.mode != "rounds":
                return {}
            self._bandits[spec.id] = bandit
        entries = await store.rounds(spec.id, since=bandit.rounds)
        view = bandit.replay(spec.initial_objective, [e.record for e in entries]).view()
        return {g: (v["weight"], v["size"]) for g, v in view["generators"].items()}


def _forecast(
    spec: TaskSpec, rt: TaskRuntime, recent: list[RoundRecord], rows: list[UsageRow], now: float
) -> dict[str, float | None]:
    """The forecast gauges from the task's recent rounds (the same functions the report uses)."""
    start = [spec.initial_objective] if (not recent or recent[0].round == 0) else []
    objectives = start + [r.objective for r in recent]
    rounds = max(1, rt.round)
    elapsed = (rt.finished_at if rt.finished_at is not None else now) - spec.created_at
    pace = fc.Pace(
        seconds=elapsed / rounds,
        tokens=sum(r.usage.tokens for r in rows) / rounds or None,
        agent_seconds=sum(r.usage.seconds for r in rows) / rounds or None,
    )
    f = fc.forecast(
        objectives,
        spec.reference,
        horizon=spec.stop_when.horizon_rounds if spec.stop_when else 5,
        pace=pace,
        tolerance=spec.tolerance,
        optimum=spec.reference_kind == "optimum",
    )
    out: dict[str, float | None] = {k: v for k, v in f.model_dump().items() if k in FORECAST_GAUGES}
    out["predicted_gap"] = fc.one_step([o - spec.reference for o in objectives], tolerance=spec.tolerance)
    out["consecutive_misses"] = float(fc.consecutive_misses([r.hit for r in recent]))
    return out


def _budget_used(spec: TaskSpec, rt: TaskRuntime, rows: list[UsageRow], now: float) -> dict[str, float]:
    """Fraction spent of each task-level budget that is set (per-agent budgets are not exported)."""
    b = spec.budgets
    elapsed = (rt.finished_at if rt.finished_at is not None else now) - spec.created_at
    spent = {
        "rounds": (rt.round, b.rounds),
        "seconds": (elapsed, b.seconds),
        "tokens": (sum(r.usage.tokens for r in rows), b.tokens),
        "calls": (sum(r.usage.calls for r in rows), b.calls),
    }
    return {
        name: (used / limit if limit else 1.0) for name, (used, limit) in spent.items() if limit is not None
    }
