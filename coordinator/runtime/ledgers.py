"""A task's books as the runtime reads them: the ledger, the next round's forecast, the anytime clock."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.reports import books
from coordinator.reports.ledger import RunLedger
from coordinator.runtime.cache import TaskCache
from coordinator.runtime.context import ServiceContext
from coordinator.store.base import TaskSpec


@dataclass(eq=False)
class Ledgers:
    ctx: ServiceContext
    cache: TaskCache

    async def ledger(self, task_id: str) -> RunLedger:
        spec = await self.cache.spec(task_id)
        known = await self.cache.known_rounds(task_id)
        store = self.ctx.store
        return books.ledger_of(
            spec,
            await store.get_runtime(task_id),
            list(known),
            {},
            await store.usage(task_id),
            self.ctx.clock(),
        )

    async def predict_next(self, task_id: str) -> float | None:
        """``ledger(task_id).predict_next()``, from the rounds' gaps alone: asked before every round, it
        read and summed every agent's usage rows and the runtime for a forecast that uses neither."""
        spec = await self.cache.spec(task_id)
        known = await self.cache.known_rounds(task_id)
        return books.gaps_ledger(spec, [r.record for r in known]).predict_next()

    async def times(self, spec: TaskSpec) -> dict[str, float]:
        """A closing round's place on the anytime curve: seconds since the task was created, and the
        agent-seconds its agents reported (proposals and abandoned leases) so far."""
        rows = await self.ctx.store.usage(spec.id)
        return {
            "t": round(self.ctx.clock() - spec.created_at, 6),
            "agent_seconds": round(sum(r.usage.seconds for r in rows), 6),
        }
