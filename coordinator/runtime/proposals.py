"""Proposals: store one (then it is acknowledged), long-poll its verdict, fold in the next lease."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass
from typing import TypedDict, Unpack

from coordinator import errors
from coordinator.engine.records import Proposal
from coordinator.runtime.budgets import BudgetKeeper
from coordinator.runtime.cache import TaskCache
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.events import TaskEvents
from coordinator.runtime.leases import Leases
from coordinator.runtime.rounds import Rounds
from coordinator.runtime.window import AsyncMerges
from coordinator.runtime.wire import ProposalIn, ProposalView
from coordinator.store.base import TERMINAL, AgentRecord

log = logging.getLogger("blockopt.service")


class NextLeaseAsk(TypedDict, total=False):
    """What an agent asks of a reply that may carry its next lease: ``next_lease`` (``with_next_lease``), and
    ``since``, the version of the contract it keeps (the next one is written against it where it can be,
    ``Leases.lease``)."""

    next_lease: bool
    since: int | None


@dataclass(eq=False)
class Proposals:
    """Store a proposal, long-poll its verdict, fold in the next lease."""

    ctx: ServiceContext
    cache: TaskCache
    events: TaskEvents
    budgets: BudgetKeeper
    leases: Leases
    rounds: Rounds
    merges: AsyncMerges

    async def submit(
        self, task_id: str, agent: AgentRecord, body: ProposalIn, wait: float, **ask: Unpack[NextLeaseAsk]
    ) -> tuple[ProposalView, bool]:
        """Store the proposal (then it is acknowledged); return its view and whether it has a verdict.

        ``ask``: once the verdict is known, also lease the agent's next block (``NextLeaseAsk``).
        """
        spec = await self.cache.spec(task_id)
        runtime = await self.budgets.ensure_running(task_id)
        await self.budgets.check(spec, runtime, agent.id)
        proposal = Proposal.model_construct(  # (from the validated body: not validated again)
            id=body.id or uuid.uuid4().hex,
            agent=agent.id,
            block=body.block,
            value=body.value,
            base_version=body.base_version,
            predicted_improvement=body.predicted_improvement,
            usage=body.usage,
            exact_minimizer=body.exact_minimizer,
        )
        # Taken before the write, so no commit after it goes unseen. A new proposal of a rounds-mode task
        # has no verdict before the next commit, and the task ran a moment ago: its long poll starts by
        # waiting, not by reading the proposal and the runtime (two store round trips per proposal).
        event = self.events.changed(task_id)
        queued, created = await self.ctx.store.enqueue_proposal(
            task_id, body.lease_id, proposal, self.ctx.clock()
        )
        if created:  # (no wake-up here: waiters wait for verdicts, which only commits produce)
            if spec.mode == "async":
                await self.merges.run(task_id)
            else:
                await self.rounds.maybe_close(task_id)
        first = event if created and spec.mode == "rounds" else None
        next_lease, since = ask.get("next_lease", False), ask.get("since")
        return await self.proposal(task_id, proposal.id, wait, agent, next_lease, first, since)

    async def queued(self, task_id: str) -> None:
        """A proposal was stored or a lease released, here or in another process: run what it makes due."""
        if (await self.cache.spec(task_id)).mode == "async":
            await self.merges.run(task_id)
        else:
            await self.rounds.maybe_close(task_id)

    async def with_next_lease(
        self, task_id: str, agent: AgentRecord, view: ProposalView, since: int | None = None
    ) -> ProposalView:
        """The view with the agent's next lease folded in (``Leases.next_lease``): the lease round trip of a
        steady agent loop disappears (1 request per proposal instead of 2-3)."""
        grant = await self.leases.next_lease(task_id, agent, since)
        return view if grant is None else view.model_copy(update={"next_lease": grant})

    async def proposal(
        self,
        task_id: str,
        proposal_id: str,
        wait: float,
        agent: AgentRecord | None = None,
        next_lease: bool = False,
        first: asyncio.Event | None = None,
        since: int | None = None,
    ) -> tuple[ProposalView, bool]:
        """The proposal's view once it has a verdict or ``wait`` seconds passed. ``first``: the task's
        change event taken before the proposal was stored; wait on it before the first read."""
        deadline = self.ctx.clock() + min(max(wait, 0.0), self.ctx.settings.max_wait)
        if first is not None and deadline > self.ctx.clock():
            await self._wait(first, deadline)
        while True:
            event = self.events.changed(task_id)
            queued, verdict = await self.ctx.store.get_proposal(task_id, proposal_id)
            if agent is not None and queued.proposal.agent != agent.id:
                raise errors.Forbidden("this proposal belongs to another agent", proposal_id=proposal_id)
            remaining = deadline - self.ctx.clock()
            if verdict is not None or remaining <= 0:
                break
            runtime = await self.ctx.store.get_runtime(task_id)
            if runtime.status in TERMINAL:
                break
            await self._wait(event, deadline)
        p = queued.proposal
        view = ProposalView.model_construct(  # (stored records: not validated again)
            id=p.id,
            agent_id=p.agent,
            block=p.block,
            base_version=p.base_version,
            status=verdict.status if verdict else "pending",
            verdict=verdict,
        )
        if next_lease and verdict is not None and agent is not None:
            view = await self.with_next_lease(task_id, agent, view, since)
        return view, verdict is not None

    async def _wait(self, event: asyncio.Event, deadline: float) -> None:
        """Until ``event`` is set, the deadline, or a second at most (the caller then reads the store)."""
        with contextlib.suppress(TimeoutError):  # asyncio.timeout: no extra task per waiter, unlike wait_for
            async with asyncio.timeout(max(0.0, min(deadline - self.ctx.clock(), 1.0))):
                await event.wait()
