"""Shared helpers of the routing benchmarks: build a task, run our team in-process, validate a plan."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from coordinator.engine.rounds import EngineSettings
from coordinator.runtime.inproc import RunSettings, run_inproc
from tasks.base import Proposer
from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.validator import PlanCheck, validate_plan


def make_task(map_name: str, scen: str, robots: int, blocks: int, **extra: Any) -> RoutingTask:
    task = create_task(
        "routing", {"map": map_name, "scen": scen, "robots": robots, "blocks": blocks, **extra}
    )
    assert isinstance(task, RoutingTask)
    return task


def check(task: RoutingTask, paths: list[list[tuple[int, int]]]) -> PlanCheck:
    """Our independent validator on (x, y) paths."""
    g = task.grid
    return validate_plan(
        g.rows(), [g.xy(s) for s in task.inst.starts], [g.xy(t) for t in task.inst.goals], paths
    )


class _Done(Exception):
    pass


@dataclass
class TeamRun:
    feasible: bool
    soc: int
    lower_bound: int
    seconds: float
    rounds: int
    first_feasible_s: float | None = None
    first_feasible_round: int | None = None
    parallel_s: float | None = None
    """Wall time if the agents had run side by side: per round the slowest proposer plus the engine."""
    verdict: PlanCheck | None = None
    history: list[dict[str, Any]] = field(default_factory=list)


class _TimedProposer(Proposer):
    def __init__(self, inner: Proposer, log: list[float]) -> None:
        self.inner, self.log = inner, log

    def propose(self, contract: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.propose(contract)
        finally:
            self.log.append(time.perf_counter() - t0)


def run_team(
    task: RoutingTask,
    agents: int,
    *,
    merge: str = "checked",
    time_limit: float = 30.0,
    time_budget: float = 0.5,
    seed: int = 0,
    stop_when_feasible: bool = False,
    stall_rounds: int | None = None,
    knobs: dict[str, Any] | None = None,
) -> TeamRun:
    """Our team in-process on ``task``; ``knobs`` are further proposer knobs (defaults otherwise)."""
    from coordinator.reports.ledger import StopRule

    params = task.ProposerParams(time_budget=time_budget, **(knobs or {}))
    calls: list[float] = []
    original = task.make_proposer
    task.make_proposer = lambda k, seed=0: _TimedProposer(original(k, seed), calls)  # type: ignore[method-assign,assignment,return-value]
    first: dict[str, float] = {}
    parallel = [0.0]
    started = time.monotonic()

    def on_round(outcome: Any, ledger: Any) -> None:
        r = outcome.record
        parallel[0] += (max(calls) if calls else 0.0) + r.engine_seconds + r.eval_seconds
        calls.clear()
        if "s" not in first and task.feasible(outcome.snapshot.state):
            first["s"] = time.monotonic() - started
            first["round"] = r.round + 1
            first["parallel"] = parallel[0]
            if stop_when_feasible:
                raise _Done

    stop = StopRule() if stall_rounds is None else StopRule(stall_rounds=stall_rounds)
    settings = RunSettings(agents=agents, max_rounds=100_000, time_limit=time_limit, seed=seed, stop=stop)
    state = None
    rounds = 0
    try:
        result = run_inproc(task, params, settings, EngineSettings(merge_policy=merge), on_round=on_round)  # type: ignore[arg-type]
        state, rounds = result.snapshot.state, len(result.ledger.records)
    except _Done:
        pass
    finally:
        task.make_proposer = original  # type: ignore[method-assign]
    seconds = time.monotonic() - started
    if state is None:
        return TeamRun(
            True,
            -1,
            task.lower_bound(),
            seconds,
            int(first["round"]),
            first["s"],
            int(first["round"]),
            first["parallel"],
        )
    verdict = check(task, [[task.grid.xy(c) for c in p] for p in state.paths])
    return TeamRun(
        verdict.valid,
        verdict.soc,
        task.lower_bound(),
        seconds,
        rounds,
        first.get("s"),
        int(first["round"]) if "round" in first else None,
        first.get("parallel"),
        verdict,
    )
