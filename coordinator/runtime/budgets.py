"""Whether a task still runs, and what its budgets have left (rounds, seconds, tokens, calls; per agent)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator import errors
from coordinator.runtime.cache import TaskCache
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.events import TaskEvents
from coordinator.status import TaskStatus
from coordinator.store.base import TERMINAL, TaskRuntime, TaskSpec


def running(task_id: str, runtime: TaskRuntime) -> TaskRuntime:
    """``runtime`` when the task runs; the error an agent gets when it has ended."""
    if runtime.status == "budget_exhausted":
        raise errors.BudgetExceeded(f"the task's budget is spent: {runtime.reason}", task_id=task_id)
    if runtime.status in TERMINAL:
        raise errors.TaskFinished(
            f"the task has ended ({runtime.status})", task_id=task_id, status=runtime.status
        )
    return runtime


@dataclass(eq=False)
class BudgetKeeper:
    ctx: ServiceContext
    cache: TaskCache
    events: TaskEvents

    async def ensure_running(self, task_id: str) -> TaskRuntime:
        return running(task_id, await self.cache.runtime(task_id))

    async def left(self, spec: TaskSpec, runtime: TaskRuntime, agent: str | None) -> dict[str, Any]:
        """What each budget has left (None: no such budget); with ``agent``, its own budgets too."""
        b = spec.budgets
        usage_budgets = (b.tokens, b.calls, b.agent_tokens, b.agent_calls)
        rows = await self.ctx.store.usage(spec.id) if any(x is not None for x in usage_budgets) else []
        tokens = sum(r.usage.tokens for r in rows)
        calls = sum(r.usage.calls for r in rows)
        elapsed = self.ctx.clock() - spec.created_at
        left: dict[str, Any] = {
            "rounds": None if b.rounds is None else b.rounds - runtime.round,
            "seconds": None if b.seconds is None else round(b.seconds - elapsed, 3),
            "tokens": None if b.tokens is None else b.tokens - tokens,
            "calls": None if b.calls is None else b.calls - calls,
        }
        if agent is not None:
            mine = [r for r in rows if r.agent == agent]
            if b.agent_tokens is not None:
                left["agent_tokens"] = b.agent_tokens - sum(r.usage.tokens for r in mine)
            if b.agent_calls is not None:
                left["agent_calls"] = b.agent_calls - sum(r.usage.calls for r in mine)
        return left

    async def check(self, spec: TaskSpec, runtime: TaskRuntime, agent: str) -> dict[str, Any]:
        """``left``, or BudgetExceeded when a budget is spent (a task budget also ends the task)."""
        left = await self.left(spec, runtime, agent)
        for name in ("rounds", "seconds", "tokens", "calls"):
            if left[name] is not None and left[name] <= 0:
                await self.events.finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, f"{name} budget spent")
                raise errors.BudgetExceeded(f"the task's {name} budget is spent", budget=name)
        for name in ("agent_tokens", "agent_calls"):
            if left.get(name) is not None and left[name] <= 0:
                raise errors.BudgetExceeded(f"this agent's {name.split('_')[1]} budget is spent", budget=name)
        return left
