"""Whether a closed round (or async window) ends its task: the stop rule, ``stop_when``, the budgets."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.reports import books
from coordinator.reports.stopping import stalled_reason
from coordinator.runtime.budgets import BudgetKeeper
from coordinator.runtime.cache import TaskCache
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.events import TaskEvents
from coordinator.runtime.ledgers import Ledgers
from coordinator.status import TaskStatus
from coordinator.store.base import TaskRuntime, TaskSpec


@dataclass(eq=False)
class Ending:
    ctx: ServiceContext
    cache: TaskCache
    events: TaskEvents
    budgets: BudgetKeeper
    ledgers: Ledgers

    async def after_round(
        self, spec: TaskSpec, runtime: TaskRuntime, objective: float, proposals: int
    ) -> None:
        """End the task when the round just closed meets a stopping rule or spends a budget."""
        now = self.ctx.clock()
        since, records = runtime.last_merge_at, None
        if runtime.stalled >= spec.stop_stall_rounds:  # the stall rule may be met: it reads the curve
            known = await self.cache.known_rounds(spec.id)
            records = [e.record for e in known]
            if since is None and known:  # no merge yet: quiet since the work began, not since the request
                since = known[0].opened_at  # (a kind's preparation may take a good part of the time limit)
        quiet = now - (since or spec.created_at)
        ended = books.stop_status(
            spec, objective, runtime.stalled, proposals, quiet, now - spec.created_at, records
        )
        why = None
        if ended is None and spec.stop_when is not None:
            ledger = await self.ledgers.ledger(spec.id)
            why = spec.stop_when.verdict(len(ledger.records), ledger.forecast(spec.stop_when.horizon_rounds))
        if ended is not None:
            reason = (
                "stopping rule met (relative gap)"
                if ended == TaskStatus.OPTIMAL
                else stalled_reason(runtime.stalled, quiet)
            )
            await self.events.finish(spec.id, ended, reason)
        elif why is not None:
            await self.events.finish(spec.id, TaskStatus.DIMINISHING_RETURNS, why)
        elif spec.budgets.rounds is not None and runtime.round >= spec.budgets.rounds:
            await self.events.finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, "rounds budget spent")
        else:
            left = await self.budgets.left(spec, runtime, None)
            spent = [k for k in ("tokens", "calls") if left[k] is not None and left[k] <= 0]
            if spent:
                await self.events.finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, f"{spent[0]} budget spent")
