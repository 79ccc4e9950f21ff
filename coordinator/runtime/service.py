"""The task runtime behind the API: ``CoordinatorService``, a facade over collaborators with one job each.

Each collaborator gets what it uses through its constructor (``docs/architecture.md`` §8); none inherits
from another. Read them in this order:

    context     settings, store, metrics, clock, this process's name and role (``ServiceContext``)
    events      long-poll wake-ups, a task's end, background jobs (``TaskEvents``, ``Background``)
    cache       this process's memory of each task, one ``TaskMemory`` per task (``TaskCache``)
    steps       where a call into a kind runs: the loop or a thread (``StepRunner``)
    budgets     is the task running, what its budgets have left (``BudgetKeeper``)
    round_lock  the round lock across replicas, which owns its heartbeat (``RoundLock``)
    ledgers     the task's ledger, next-round forecast, anytime clock (``Ledgers``)
    ending      whether a closed round ends the task (``Ending``)
    rounds      rounds mode: quorum or deadline, run and commit a round (``Rounds``)
    window      async mode: score each arrival, close windows into round records (``AsyncMerges``)
    leases      lease, renew, release (``Leases``)
    feeds       what merged since the head an agent's search is on (``HeadFeeds``)
    proposals   submit, long-poll a verdict, the next lease folded in (``Proposals``)
    tasks       create, view, report, stop (``TaskBook``)
    agents      join and authenticate agents (``AgentBook``)
    scheduler   the tick: lease expiry, time budgets, due rounds, eviction (``Scheduler``)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Unpack

from coordinator.cancelling import stop_tasks
from coordinator.engine import forecast as fc
from coordinator.reports.ledger import Report
from coordinator.runtime.agents import AgentBook
from coordinator.runtime.budgets import BudgetKeeper
from coordinator.runtime.cache import TaskCache
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.ending import Ending
from coordinator.runtime.events import Background, TaskEvents
from coordinator.runtime.following import HeadFeeds
from coordinator.runtime.leases import Leases
from coordinator.runtime.ledgers import Ledgers
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.proposals import NextLeaseAsk, Proposals
from coordinator.runtime.round_lock import RoundLock
from coordinator.runtime.rounds import Rounds
from coordinator.runtime.scheduler import Scheduler
from coordinator.runtime.steps import StepRunner
from coordinator.runtime.tasks import TaskBook
from coordinator.runtime.window import AsyncMerges
from coordinator.runtime.wire import (
    CreateTask,
    HeadChangesView,
    Joined,
    JoinRequest,
    LeaseGrant,
    ProposalIn,
    ProposalView,
    TaskCreated,
    TaskView,
)
from coordinator.settings import ServiceSettings
from coordinator.store.base import AbandonedLease, AgentRecord, Lease, Store, TaskSpec
from tasks.base import Task

if TYPE_CHECKING:
    from coordinator.store.bus import Bus


class CoordinatorService:
    """The service the API calls: it builds the collaborators and hands each call to the one it is for."""

    def __init__(
        self,
        settings: ServiceSettings,
        store: Store,
        metrics: ServiceMetrics,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ctx = ctx = ServiceContext(settings, store, metrics, clock)
        self.background = Background()
        self.events = TaskEvents(ctx, self.background)
        self.cache = TaskCache(ctx, self.events)
        self.steps = StepRunner(ctx)
        self.budgets = BudgetKeeper(ctx, self.cache, self.events)
        self.round_lock = RoundLock(ctx)
        self.ledgers = Ledgers(ctx, self.cache)
        ending = Ending(ctx, self.cache, self.events, self.budgets, self.ledgers)
        self.rounds = Rounds(
            ctx, self.cache, self.events, self.background, self.steps, self.round_lock, self.ledgers, ending
        )
        self.merges = AsyncMerges(
            ctx, self.cache, self.events, self.steps, self.round_lock, self.ledgers, ending
        )
        self.leases = Leases(
            ctx,
            self.cache,
            self.events,
            self.background,
            self.steps,
            self.round_lock,
            self.budgets,
            self.rounds,
        )
        self.feeds = HeadFeeds(ctx, self.cache, self.steps)
        self.proposals = Proposals(
            ctx, self.cache, self.events, self.budgets, self.leases, self.rounds, self.merges
        )
        self.tasks = TaskBook(ctx, self.cache, self.events, self.steps, self.ledgers)
        self.agents = AgentBook(ctx, self.cache, self.budgets)
        self.scheduler = Scheduler(ctx, self.cache, self.events, self.rounds, self.merges)
        self._scheduling: asyncio.Task[None] | None = None
        self.ready = False
        metrics.cache_sizes = self.cache_sizes

    # -- what the service is and where it runs ------------------------------------------------------
    @property
    def settings(self) -> ServiceSettings:
        return self.ctx.settings

    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def clock(self) -> Callable[[], float]:
        return self.ctx.clock

    @property
    def owner(self) -> str:
        return self.ctx.owner

    @property
    def rounds_here(self) -> bool:
        """False on an API process of the split mode: rounds, lease expiry and budgets run elsewhere."""
        return self.ctx.rounds_here

    @rounds_here.setter
    def rounds_here(self, value: bool) -> None:
        self.ctx.rounds_here = value

    @property
    def bus(self) -> Bus | None:
        return self.ctx.bus

    @bus.setter
    def bus(self, bus: Bus | None) -> None:
        self.ctx.bus = bus

    # -- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        if self.ctx.rounds_here:
            self._scheduling = asyncio.create_task(self.scheduler.run_forever(), name="blockopt-scheduler")
        self.ready = True

    @property
    def scheduling(self) -> bool:
        """Whether this process runs the scheduler (not on an API process of the split mode)."""
        return self._scheduling is not None

    async def close(self) -> None:
        self.ready = False
        preparing = [p.job for p in self.cache.preparations()]  # (their threads finish on their own)
        await stop_tasks(self._scheduling, *self.background.jobs, *preparing)
        with contextlib.suppress(Exception):
            await self.scheduler.leave()

    async def tick(self) -> None:
        await self.scheduler.tick()

    def serves(self, task_id: str) -> bool:
        return self.scheduler.serves(task_id)

    # -- tasks ------------------------------------------------------------------------------------------
    async def create(self, req: CreateTask) -> tuple[TaskSpec, str, str]:
        return await self.tasks.create(req)

    async def begin(self, req: CreateTask) -> TaskCreated:
        return await self.tasks.begin(req)

    async def spec(self, task_id: str) -> TaskSpec:
        return await self.cache.spec(task_id)

    async def view(self, task_id: str) -> TaskView:
        return await self.tasks.view(task_id)

    async def views(self) -> list[TaskView]:
        return await self.tasks.views()

    async def forecast(self, task_id: str) -> fc.Forecast:
        return await self.tasks.forecast(task_id)

    async def report(self, task_id: str) -> Report:
        return await self.tasks.report(task_id)

    async def solution(self, task_id: str) -> dict[str, Any]:
        return await self.tasks.solution(task_id)

    async def current(self, task_id: str) -> tuple[Task[Any], Any, int]:
        return await self.tasks.current(task_id)

    async def stop(self, task_id: str) -> TaskView:
        return await self.tasks.stop(task_id)

    async def read_token_hash(self, task_id: str) -> str:
        return await self.tasks.read_token_hash(task_id)

    # -- agents, leases, proposals -----------------------------------------------------------------------
    async def join(self, task_id: str, join_token: str, req: JoinRequest) -> Joined:
        return await self.agents.join(task_id, join_token, req)

    async def authenticate(self, task_id: str, header: str | None) -> AgentRecord:
        return await self.agents.authenticate(task_id, header)

    async def lease(self, task_id: str, agent: AgentRecord, since: int | None = None) -> LeaseGrant:
        return await self.leases.lease(task_id, agent, since)

    async def renew(self, task_id: str, agent: AgentRecord, lease_id: str) -> Lease:
        return await self.leases.renew(task_id, agent, lease_id)

    async def changes(self, task_id: str, agent: AgentRecord, since: int) -> HeadChangesView:
        return await self.feeds.changes(task_id, agent, since)

    async def release(self, task_id: str, agent: AgentRecord, lease_id: str) -> None:
        await self.leases.release(task_id, agent, lease_id)

    async def abandon(self, task_id: str, agent: AgentRecord, lease_id: str, record: AbandonedLease) -> bool:
        return await self.leases.abandon(task_id, agent, lease_id, record)

    async def next_lease(
        self, task_id: str, agent: AgentRecord, since: int | None = None
    ) -> LeaseGrant | None:
        return await self.leases.next_lease(task_id, agent, since)

    async def submit(
        self, task_id: str, agent: AgentRecord, body: ProposalIn, wait: float, **ask: Unpack[NextLeaseAsk]
    ) -> tuple[ProposalView, bool]:
        return await self.proposals.submit(task_id, agent, body, wait, **ask)

    async def proposal(
        self,
        task_id: str,
        proposal_id: str,
        wait: float,
        agent: AgentRecord | None = None,
        next_lease: bool = False,
        since: int | None = None,
    ) -> tuple[ProposalView, bool]:
        return await self.proposals.proposal(task_id, proposal_id, wait, agent, next_lease, since=since)

    async def queued(self, task_id: str) -> None:
        await self.proposals.queued(task_id)

    async def with_next_lease(
        self, task_id: str, agent: AgentRecord, view: ProposalView, since: int | None = None
    ) -> ProposalView:
        return await self.proposals.with_next_lease(task_id, agent, view, since)

    # -- this process's memory and wake-ups ------------------------------------------------------------
    def changed(self, task_id: str) -> asyncio.Event:
        return self.events.changed(task_id)

    def wake(self, task_id: str) -> None:
        self.events.wake(task_id)

    def forget(self, task_id: str) -> None:
        self.cache.forget(task_id)

    def cache_sizes(self) -> dict[str, int]:
        """What this process holds per task (the soak benchmark watches these stay bounded)."""
        return {**self.cache.sizes(), "background": len(self.background.jobs)}
