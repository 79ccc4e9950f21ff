"""The task runtime behind the API: tasks, agents, leases, proposals and round scheduling.

All state is in the store; this object holds only rebuildable caches (built
Task objects and the snapshot of the head they were built at), per-task locks
so one round runs at a time in this process, and wake-up events for long
polls. Heavy engine work runs in a worker thread, never on the event loop.

Rounds mode: a round closes when a quorum of leased blocks has submitted
(``settings.quorum`` of queued + still-leased blocks) or ``round_deadline``
after its first proposal, whichever first. Async mode: each arrival is scored
and merged on its own (optimistic concurrency: rejected as ``stale_footprint``
when its footprint meets a block committed since its base version); the round
records are then bookkeeping windows closed on the same deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coordinator import auth, books, errors, paramcheck
from coordinator import forecast as fc
from coordinator.convergence import MergedScore, check_accounting, round_constants
from coordinator.engine import EngineSettings, RoundEngine, RoundOutcome
from coordinator.inproc import contract_envelope
from coordinator.ledger import Report, relative_gap
from coordinator.metrics import ServiceMetrics
from coordinator.records import Proposal, RoundRecord, Snapshot, Verdict
from coordinator.settings import ServiceSettings
from coordinator.status import TaskStatus
from coordinator.store.base import (
    TERMINAL,
    AbandonedLease,
    AgentRecord,
    Commit,
    Head,
    Lease,
    RoundEntry,
    Store,
    TaskRuntime,
    TaskSpec,
    WindowState,
)
from coordinator.wire import CreateTask, Joined, JoinRequest, LeaseGrant, ProposalIn, ProposalView, TaskView
from tasks.base import Task
from tasks.registry import InvalidParams, UnknownKind, create_task, kind_class

if TYPE_CHECKING:
    from coordinator.notify import Bus

log = logging.getLogger("blockopt.service")


@dataclass
class _Built:
    """A task rebuilt from (kind, params) in this process, and the head it last loaded."""

    task: Task[Any]
    engine: RoundEngine
    snapshot: Snapshot


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _head_of(snap: Snapshot, state: Any, version: int | None = None) -> Head:
    """The stored head of a committed snapshot (``state`` already dumped to JSON)."""
    return Head(
        version=snap.version if version is None else version,
        objective=snap.objective,
        block_versions=list(snap.block_versions),
        state=state,
    )


class CoordinatorService:
    AGENT_CACHE = 100_000
    """Verified agents cached per process (cleared when full)."""

    def __init__(
        self,
        settings: ServiceSettings,
        store: Store,
        metrics: ServiceMetrics,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.clock = clock
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """Round-lock owner: host and pid first, so an operator (or a fault test) can tell who holds a lock."""
        self.limiter = auth.RateLimiter(settings.rate_per_agent, settings.rate_burst)
        self._built: dict[str, _Built] = {}
        self._specs: dict[str, TaskSpec] = {}
        self._agents: dict[tuple[str, str], AgentRecord] = {}
        """(task id, token digest) -> agent: see ``_remember_agent``."""
        self._locks: dict[str, asyncio.Lock] = {}
        self._events: dict[str, asyncio.Event] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._scheduler: asyncio.Task[None] | None = None
        self.ready = False
        metrics.cache_sizes = self.cache_sizes
        # -- split mode (set by coordinator/api_worker.py and coordinator/engine_worker.py) --
        self.rounds_here = True
        """False on an API process of the split mode: rounds, lease expiry and budgets run elsewhere."""
        self.bus: Bus | None = None
        """Tells other processes of a proposal queued (API) or a task changed (engine)."""

    # -- lifecycle ------------------------------------------------------------
    async def start(self) -> None:
        if self.rounds_here:
            self._scheduler = asyncio.create_task(self._schedule_forever(), name="blockopt-scheduler")
        self.ready = True

    async def close(self) -> None:
        self.ready = False
        tasks = [t for t in [self._scheduler, *self._background] if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    async def spec(self, task_id: str) -> TaskSpec:
        """The task's spec (fixed at creation, so cached per process; NotFound when unknown)."""
        spec = self._specs.get(task_id)
        if spec is None:
            spec = self._specs[task_id] = await self.store.get_task(task_id)
        return spec

    def _lock(self, task_id: str) -> asyncio.Lock:
        return self._locks.setdefault(task_id, asyncio.Lock())

    def changed(self, task_id: str) -> asyncio.Event:
        """An event set at the task's next change (take it before reading the store)."""
        return self._events.setdefault(task_id, asyncio.Event())

    def _notify(self, task_id: str) -> None:
        self.wake(task_id)
        if self.bus is not None:
            self._spawn(self.bus.publish("changed", task_id))

    def wake(self, task_id: str) -> None:
        """Wake this process's long polls of the task (``_notify`` also tells the other processes)."""
        event = self._events.pop(task_id, None)
        if event is not None:
            event.set()

    async def _handed_off(self, task_id: str) -> bool:
        """On an API process of the split mode, tell the engines a round may be due instead of running it."""
        if self.rounds_here:
            return False
        if self.bus is not None:
            await self.bus.publish("queued", task_id)
        return True

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _build(self, spec: TaskSpec, head: Head) -> _Built:
        built = self._built.get(spec.id)
        if built is not None and built.snapshot.version == head.version:
            return built
        # One build, and one load per new head, however many requests ask at once (an API process of the
        # split mode learns of each commit from the store, and every long poll it wakes asks together).
        async with self._lock(f"load:{spec.id}"):
            built = self._built.get(spec.id)
            if built is None:

                def make() -> _Built:
                    task = create_task(spec.kind, spec.params)
                    engine = RoundEngine(task, EngineSettings(merge_policy=spec.merge_policy))
                    return _Built(task, engine, self._snapshot_of(task, head))

                built = await asyncio.to_thread(make)
                self._built[spec.id] = built
            elif built.snapshot.version != head.version:
                built.snapshot = await asyncio.to_thread(self._snapshot_of, built.task, head)
        return built

    @staticmethod
    def _snapshot_of(task: Task[Any], head: Head) -> Snapshot:
        return Snapshot(head.version, head.objective, tuple(head.block_versions), task.load_state(head.state))

    # -- tasks ------------------------------------------------------------------
    async def create(self, req: CreateTask) -> tuple[TaskSpec, str, str]:
        """The stored spec, the join token and the read token (both shown once, stored as digests)."""
        if self.settings.kinds and req.kind not in self.settings.kinds:
            raise errors.InvalidRequest(
                f"this coordinator serves only {', '.join(self.settings.kinds)}; not '{req.kind}'",
                field="kind",
            )
        try:
            cls = kind_class(req.kind)
            knobs = cls.ProposerParams.model_validate(req.proposer.knobs)
        except UnknownKind as exc:
            raise errors.InvalidRequest(str(exc), field="kind") from None
        except ValueError as exc:
            raise errors.InvalidRequest(
                f"proposer knobs: {str(exc).splitlines()[0]}", field="proposer.knobs"
            ) from None
        paramcheck.check(req.kind, cls.Params, req.params, self.settings.data_dirs)
        try:
            task = await asyncio.to_thread(create_task, req.kind, req.params)
        except InvalidParams as exc:
            raise errors.InvalidRequest(str(exc), field=f"params.{exc.param}") from None
        engine = RoundEngine(task, EngineSettings(merge_policy=req.merge_policy))
        snap = await asyncio.to_thread(engine.initial_snapshot)
        join_token, read_token = auth.new_token("join"), auth.new_token("read")
        budgets = req.budgets
        if budgets.rounds is None:
            budgets = budgets.model_copy(update={"rounds": self.settings.default_max_rounds})
        spec = TaskSpec(
            id=_new_id("t"),
            kind=task.kind,
            name=task.name,
            n_blocks=task.n_blocks,
            params=task.params.model_dump(),
            merge_policy=req.merge_policy,
            mode=req.mode,
            budgets=budgets,
            proposer=req.proposer.model_dump(),
            reference=engine.reference.value,
            reference_kind=engine.reference.kind,
            initial_objective=snap.objective,
            tolerance=engine.tolerance,
            window=req.window,
            stop_relative_gap=req.stop.relative_gap,
            stop_stall_rounds=req.stop.stall_rounds,
            stop_lag_rounds=task.make_proposer(knobs).lag_rounds,
            a_priori=engine.a_priori.constants if engine.a_priori else None,
            stop_when=req.stop_when,
            join_token_hash=auth.token_hash(join_token),
            read_token_hash=auth.token_hash(read_token),
            created_at=self.clock(),
        )
        head = _head_of(snap, task.dump_state(snap.state), version=0)
        await self.store.create_task(spec, head)
        self._built[spec.id] = _Built(task, engine, snap)
        log.info("task %s created: %s (%s, %s)", spec.id, spec.name, spec.merge_policy, spec.mode)
        return spec, join_token, read_token

    async def view(self, task_id: str) -> TaskView:
        spec = await self.spec(task_id)
        runtime = await self.store.get_runtime(task_id)
        head = await self.store.get_head(task_id)
        built = await self._build(spec, head)
        usage = await self.store.usage(task_id)
        agents = await self.store.list_agents(task_id)
        ref = books.reference_of(spec)
        return TaskView(
            id=spec.id,
            kind=spec.kind,
            name=spec.name,
            status=runtime.status,
            reason=runtime.reason,
            round=runtime.round,
            version=head.version,
            objective=head.objective,
            gap=head.objective - spec.reference,
            relative_gap=relative_gap(head.objective, ref),
            feasible=built.task.feasible(built.snapshot.state),
            reference=spec.reference,
            reference_kind=spec.reference_kind,
            merge_policy=spec.merge_policy,
            mode=spec.mode,
            blocks=spec.n_blocks,
            agents=len(agents),
            leases=len(await self.store.active_leases(task_id, self.clock())),
            budgets=spec.budgets,
            usage={
                "tokens": float(sum(r.usage.tokens for r in usage)),
                "calls": float(sum(r.usage.calls for r in usage)),
            },
            created_at=spec.created_at,
            finished_at=runtime.finished_at,
            forecast=await self.forecast(task_id),
        )

    async def forecast(self, task_id: str) -> fc.Forecast:
        """The task's forecast from its rounds so far (limit, remaining, ETA, gain per cost)."""
        return (await self._ledger(task_id)).forecast(self._horizon(await self.spec(task_id)))

    @staticmethod
    def _horizon(spec: TaskSpec) -> int:
        return spec.stop_when.horizon_rounds if spec.stop_when else 5

    async def _ledger(self, task_id: str) -> Any:
        spec = await self.spec(task_id)
        return books.ledger_of(
            spec,
            await self.store.get_runtime(task_id),
            await self.store.rounds(task_id),
            {},
            await self.store.usage(task_id),
            self.clock(),
        )

    async def views(self) -> list[TaskView]:
        return [await self.view(spec.id) for spec in await self.store.list_tasks()]

    async def stop(self, task_id: str) -> TaskView:
        await self._finish(task_id, TaskStatus.STOPPED, "stopped by an administrator")
        return await self.view(task_id)

    async def _finish(self, task_id: str, status: TaskStatus, reason: str) -> None:
        if await self.store.finish(task_id, status, reason, self.clock()):
            log.info("task %s %s: %s", task_id, status, reason)
        self._notify(task_id)

    async def report(self, task_id: str) -> Report:
        spec = await self.spec(task_id)
        runtime = await self.store.get_runtime(task_id)
        head = await self.store.get_head(task_id)
        built = await self._build(spec, head)
        return books.report_of(
            spec,
            runtime,
            head,
            await self.store.rounds(task_id),
            await self.store.counters(task_id),
            await self.store.usage(task_id),
            len(await self.store.list_agents(task_id)),
            built.task.feasible(built.snapshot.state),
        )

    async def solution(self, task_id: str) -> dict[str, Any]:
        spec = await self.spec(task_id)
        head = await self.store.get_head(task_id)
        built = await self._build(spec, head)
        task, state = built.task, built.snapshot.state
        return {
            "task": task_id,
            "version": head.version,
            "objective": head.objective,
            "feasible": task.feasible(state),
            "solution": task.solution(state),
            "state": head.state,
        }

    async def current(self, task_id: str) -> tuple[Task[Any], Any, int]:
        """The task object, its state at the head and the head's version (read-only views, e.g. the web UI)."""
        spec = await self.spec(task_id)
        built = await self._build(spec, await self.store.get_head(task_id))
        return built.task, built.snapshot.state, built.snapshot.version

    # -- agents -------------------------------------------------------------------
    async def join(self, task_id: str, join_token: str, req: JoinRequest) -> Joined:
        spec = await self.spec(task_id)
        if not auth.matches(join_token, spec.join_token_hash):
            raise errors.Unauthorized("the join token does not match this task")
        await self._ensure_running(task_id)
        token = auth.new_token("agent")
        agent = AgentRecord(
            id=_new_id("a"),
            task_id=task_id,
            name=req.name or "agent",
            token_hash=auth.token_hash(token),
            proposer=req.proposer,
            model=req.model,
            joined_at=self.clock(),
        )
        await self.store.add_agent(agent)
        return Joined(
            agent_id=agent.id,
            token=token,
            lease_ttl=self.settings.lease_ttl,
            task={
                "id": spec.id,
                "kind": spec.kind,
                "params": spec.params,
                "mode": spec.mode,
                "proposer": spec.proposer,
                "blocks": spec.n_blocks,
            },
        )

    async def authenticate(self, task_id: str, header: str | None) -> AgentRecord:
        token = auth.bearer(header)
        digest = auth.token_hash(token)
        agent = self._agents.get((task_id, digest))
        if agent is None:
            agent = await self.store.agent_by_token(task_id, digest)
            if agent is None or not auth.matches(token, agent.token_hash):
                await self.spec(task_id)  # 404 for an unknown task, else 401
                raise errors.Unauthorized("the agent token is not valid for this task")
            self._remember_agent(task_id, digest, agent)
        self.limiter.check(agent.id)
        return agent

    def _remember_agent(self, task_id: str, digest: str, agent: AgentRecord) -> None:
        """Cache a verified agent per process: agent records never change and are never revoked, so this
        saves a store lookup (a Redis round trip) on every agent request. Only successes are cached."""
        if len(self._agents) >= self.AGENT_CACHE:
            self._agents.clear()
        self._agents[(task_id, digest)] = agent

    async def _ensure_running(self, task_id: str) -> TaskRuntime:
        runtime = await self.store.get_runtime(task_id)
        if runtime.status == "budget_exhausted":
            raise errors.BudgetExceeded(f"the task's budget is spent: {runtime.reason}", task_id=task_id)
        if runtime.status in TERMINAL:
            raise errors.TaskFinished(
                f"the task has ended ({runtime.status})", task_id=task_id, status=runtime.status
            )
        return runtime

    async def _budget_left(self, spec: TaskSpec, runtime: TaskRuntime, agent: str | None) -> dict[str, Any]:
        b = spec.budgets
        usage_budgets = (b.tokens, b.calls, b.agent_tokens, b.agent_calls)
        rows = await self.store.usage(spec.id) if any(x is not None for x in usage_budgets) else []
        tokens = sum(r.usage.tokens for r in rows)
        calls = sum(r.usage.calls for r in rows)
        left: dict[str, Any] = {
            "rounds": None if b.rounds is None else b.rounds - runtime.round,
            "seconds": None if b.seconds is None else round(b.seconds - (self.clock() - spec.created_at), 3),
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

    async def _check_budget(self, spec: TaskSpec, runtime: TaskRuntime, agent: str) -> dict[str, Any]:
        left = await self._budget_left(spec, runtime, agent)
        for name in ("rounds", "seconds", "tokens", "calls"):
            if left[name] is not None and left[name] <= 0:
                await self._finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, f"{name} budget spent")
                raise errors.BudgetExceeded(f"the task's {name} budget is spent", budget=name)
        for name in ("agent_tokens", "agent_calls"):
            if left.get(name) is not None and left[name] <= 0:
                raise errors.BudgetExceeded(f"this agent's {name.split('_')[1]} budget is spent", budget=name)
        return left

    async def lease(self, task_id: str, agent: AgentRecord) -> LeaseGrant:
        spec = await self.spec(task_id)
        runtime = await self._ensure_running(task_id)
        left = await self._check_budget(spec, runtime, agent.id)
        head = await self.store.get_head(task_id)
        lease = await self.store.acquire_lease(
            task_id, agent.id, head.version, self.settings.lease_ttl, self.clock()
        )
        if lease is None:
            raise errors.NoBlockAvailable(
                "every block is leased or awaiting its round; retry shortly",
                retry_after=self.settings.retry_after,
                agent_id=agent.id,
            )
        built = await self._build(spec, head)
        if (
            lease.version != built.snapshot.version
        ):  # an older lease handed back: show it the head it is on now
            lease = lease.model_copy(update={"version": built.snapshot.version})
        contract = contract_envelope(built.task, built.snapshot, lease.block, left)
        return LeaseGrant(
            lease_id=lease.id,
            agent_id=agent.id,
            block=lease.block,
            version=built.snapshot.version,
            expires_at=lease.expires_at,
            ttl=self.settings.lease_ttl,
            contract=contract,
        )

    async def renew(self, task_id: str, agent: AgentRecord, lease_id: str) -> Lease:
        await self._ensure_running(task_id)
        return await self.store.renew_lease(
            task_id, lease_id, agent.id, self.settings.lease_ttl, self.clock()
        )

    async def release(self, task_id: str, agent: AgentRecord, lease_id: str) -> None:
        await self.store.release_lease(task_id, lease_id, agent.id)
        self._spawn(self._maybe_close(task_id))

    # -- proposals ------------------------------------------------------------------
    async def submit(
        self, task_id: str, agent: AgentRecord, body: ProposalIn, wait: float, next_lease: bool = False
    ) -> tuple[ProposalView, bool]:
        """Store the proposal (then it is acknowledged); return its view and whether it has a verdict.

        ``next_lease``: once the verdict is known, also lease the agent's next block (see ``with_next_lease``).
        """
        spec = await self.spec(task_id)
        runtime = await self._ensure_running(task_id)
        await self._check_budget(spec, runtime, agent.id)
        proposal = Proposal(
            id=body.id or uuid.uuid4().hex,
            agent=agent.id,
            block=body.block,
            value=body.value,
            base_version=body.base_version,
            predicted_improvement=body.predicted_improvement,
            usage=body.usage,
            exact_minimizer=body.exact_minimizer,
        )
        queued, created = await self.store.enqueue_proposal(task_id, body.lease_id, proposal, self.clock())
        if created:  # (no wake-up here: waiters wait for verdicts, which only commits produce)
            if spec.mode == "async":
                await self._run_async(task_id)
            else:
                await self._maybe_close(task_id)
        return await self.proposal(task_id, proposal.id, wait, agent, next_lease)

    async def queued(self, task_id: str) -> None:
        """A proposal was stored or a lease released, here or in another process: run what it makes due."""
        if (await self.spec(task_id)).mode == "async":
            await self._run_async(task_id)
        else:
            await self._maybe_close(task_id)

    async def with_next_lease(self, task_id: str, agent: AgentRecord, view: ProposalView) -> ProposalView:
        """The view with the agent's next lease folded in: the lease round trip of a steady agent loop
        disappears (1 request per proposal instead of 2-3). Any reason not to lease (no free block, task
        ended, budget spent) leaves it out; the agent's own ``POST /leases`` then reports that reason."""
        try:
            grant = await self.lease(task_id, agent)
        except errors.BlockoptError:
            return view
        return view.model_copy(update={"next_lease": grant})

    async def proposal(
        self,
        task_id: str,
        proposal_id: str,
        wait: float,
        agent: AgentRecord | None = None,
        next_lease: bool = False,
    ) -> tuple[ProposalView, bool]:
        deadline = self.clock() + min(max(wait, 0.0), self.settings.max_wait)
        while True:
            event = self.changed(task_id)
            queued, verdict = await self.store.get_proposal(task_id, proposal_id)
            if agent is not None and queued.proposal.agent != agent.id:
                raise errors.Forbidden("this proposal belongs to another agent", proposal_id=proposal_id)
            remaining = deadline - self.clock()
            if verdict is not None or remaining <= 0:
                break
            runtime = await self.store.get_runtime(task_id)
            if runtime.status in TERMINAL:
                break
            with contextlib.suppress(
                TimeoutError
            ):  # asyncio.timeout: no extra task per waiter, unlike wait_for
                async with asyncio.timeout(min(remaining, 1.0)):
                    await event.wait()
        p = queued.proposal
        view = ProposalView(
            id=p.id,
            agent_id=p.agent,
            block=p.block,
            base_version=p.base_version,
            status=verdict.status if verdict else "pending",
            verdict=verdict,
        )
        if next_lease and verdict is not None and agent is not None:
            view = await self.with_next_lease(task_id, agent, view)
        return view, verdict is not None

    # -- the round lock ----------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _holding_round_lock(self, task_id: str) -> AsyncIterator[int | None]:
        """This replica's fence on the task's round lock (None: another replica holds it), renewed while held.

        Renewing every third of the TTL keeps the TTL, which is how long a task
        waits when its lock holder dies, short however long a round runs. A
        paused process renews nothing, loses the lock, and the fence refuses its
        late commit.
        """
        ttl = self.settings.round_lock_ttl
        fence = await self.store.acquire_round_lock(task_id, self.owner, ttl, self.clock())
        if fence is None:
            yield None
            return
        heartbeat = asyncio.create_task(self._renew_round_lock(task_id, fence, ttl))
        try:
            yield fence
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            await self.store.release_round_lock(task_id, fence)

    async def _renew_round_lock(self, task_id: str, fence: int, ttl: float) -> None:
        while True:
            await asyncio.sleep(ttl / 3)
            try:
                if not await self.store.renew_round_lock(task_id, fence, ttl, self.clock()):
                    log.warning("task %s: round lock (fence %d) lost to another replica", task_id, fence)
                    return
            except errors.Unavailable as exc:  # the commit will say whether the lock survived
                log.warning("task %s: round lock not renewed: %s", task_id, exc.message)
            except Exception:  # never let the heartbeat mask what the round itself raises
                log.exception("task %s: round lock heartbeat stopped", task_id)
                return

    # -- rounds mode ------------------------------------------------------------------
    async def _round_due(self, task_id: str) -> bool:
        now = self.clock()
        q = await self.store.queue_state(task_id, now)
        if q.pending == 0 or q.oldest is None:
            return bool(await self._idle_reports(task_id, now))
        quorum = q.pending >= self.settings.quorum * (q.pending + q.leases) - 1e-9
        return quorum or now - q.oldest >= self.settings.round_deadline

    async def _idle_reports(self, task_id: str, now: float) -> list[AbandonedLease]:
        """Leases that ended with nothing to propose since the last round, once they make a quorum.

        They are the agents' "nothing found": a round of them closes empty and counts as stalled, so a
        task whose agents can no longer improve it converges instead of waiting for its time limit.
        """
        spec = await self.spec(task_id)
        runtime = await self.store.get_runtime(task_id)
        last = await self.store.rounds(task_id, since=max(0, runtime.round - 1))
        since = last[-1].closed_at if last else spec.created_at
        idle = [a for a in await self.store.abandoned(task_id) if a.at > since]
        idle_blocks = {a.block for a in idle}
        if not idle_blocks:
            return []
        busy = {lease.block for lease in await self.store.active_leases(task_id, now)} - idle_blocks
        quorum = len(idle_blocks) >= self.settings.quorum * (len(idle_blocks) + len(busy)) - 1e-9
        return idle if quorum else []

    async def _maybe_close(self, task_id: str) -> None:
        if await self._handed_off(task_id):
            return
        if self._lock(task_id).locked():
            return  # the running round re-checks when it is done
        if await self._round_due(task_id):
            self._spawn(self._run_round(task_id))

    async def _run_round(self, task_id: str) -> None:
        async with self._lock(task_id):
            try:
                ran = await self._round_locked(task_id)
            except errors.Conflict as exc:  # lost a race to another replica: its commit stands
                log.warning("task %s: round not committed: %s", task_id, exc.message)
                self._built.pop(task_id, None)
                ran = False
            except errors.Unavailable as exc:  # the store is down: the round is retried when it is back
                log.warning("task %s: round not committed: %s", task_id, exc.message)
                self._built.pop(task_id, None)
                ran = False
            except Exception as exc:  # an engine or task bug: the task fails, the service lives on
                log.exception("task %s: round failed", task_id)
                await self._finish(
                    task_id, TaskStatus.FAILED, f"round failed: {type(exc).__name__}: {exc}"[:300]
                )
                ran = False
        if ran:
            await self._maybe_close(task_id)

    async def _round_locked(self, task_id: str) -> bool:
        spec = await self.spec(task_id)
        runtime = await self.store.get_runtime(task_id)
        if runtime.status in TERMINAL:
            return False
        if not await self._round_due(task_id):  # (counts pending proposals: no need to read them twice)
            return False
        async with self._holding_round_lock(task_id) as fence:
            if fence is None:
                return False
            # Read again under the lock: another replica may have run this round meanwhile (a round that
            # merged nothing leaves the version unchanged, so the version check alone would not catch it).
            runtime = await self.store.get_runtime(task_id)
            if runtime.status in TERMINAL:
                return False
            if not await self._round_due(task_id):
                return False
            pending = await self.store.pending_proposals(task_id)
            idle = [] if pending else await self._idle_reports(task_id, self.clock())
            if not pending and not idle:
                return False
            started = time.perf_counter()
            head = await self.store.get_head(task_id)
            built = await self._build(spec, head)
            proposals = [q.proposal for q in pending]
            # Regroup only when every leased block has answered: a slower agent's work (an LLM call, say)
            # would otherwise turn stale because a round closed on its deadline without it.
            answered = {p.block for p in proposals} | {a.block for a in idle}
            busy = [
                lease
                for lease in await self.store.active_leases(task_id, self.clock())
                if lease.block not in answered
            ]
            predicted = (await self._ledger(task_id)).predict_next()  # from earlier rounds, before scoring
            outcome, state_json = await asyncio.to_thread(
                self._engine_round, built, proposals, runtime.round, not busy, predicted
            )
            rec = outcome.record
            new_runtime = runtime.model_copy(
                update={
                    "round": runtime.round + 1,
                    "stalled": 0 if rec.accepted else runtime.stalled + 1,
                }
            )
            new_head = None
            if outcome.committed:
                snap = outcome.snapshot
                new_head = _head_of(snap, state_json)
            entry = RoundEntry(
                record=rec,
                bound=books.bound_dict(outcome.constants),
                opened_at=min([q.received_at for q in pending] + [a.at for a in idle]),
                closed_at=self.clock(),
            )
            await self.store.commit(
                task_id,
                Commit(
                    expected_version=head.version,
                    fence=fence,
                    runtime=new_runtime,
                    head=new_head,
                    verdicts=outcome.verdicts,
                    round=entry,
                    counters=self._counters(outcome.verdicts, rec),
                ),
            )
            built.snapshot = outcome.snapshot
            self.metrics.round_seconds.labels("rounds").observe(time.perf_counter() - started)
            self.metrics.scoring_seconds.labels("rounds").observe(rec.eval_seconds)
        self._notify(task_id)
        await self._after_round(
            spec, new_runtime, rec.objective, rec.proposals + len({a.block for a in idle})
        )
        return True

    @staticmethod
    def _engine_round(
        built: _Built, proposals: list[Proposal], index: int, regroup: bool, predicted: float | None
    ) -> tuple[RoundOutcome, Any]:
        outcome = built.engine.run_round(
            built.snapshot, proposals, index, regroup=regroup, predicted_gap=predicted
        )
        state_json = built.task.dump_state(outcome.snapshot.state) if outcome.committed else None
        return outcome, state_json

    @staticmethod
    def _counters(verdicts: list[Verdict], rec: RoundRecord | None) -> dict[str, float]:
        out: dict[str, float] = {}
        for v in verdicts:
            out[v.status] = out.get(v.status, 0) + 1
            if v.status == "rejected":
                out[f"rejected:{v.code}"] = out.get(f"rejected:{v.code}", 0) + 1
        if rec is not None:
            out["rounds"] = 1
            out["edges"] = rec.interfering
            if rec.merge_kind != "none":
                out[f"merges:{rec.merge_kind}"] = 1
            if rec.regrouped:
                out["regroups"] = 1
            if rec.a_priori_held is not None:
                out["a_priori_held" if rec.a_priori_held else "a_priori_failed"] = 1
            elif rec.a_priori_precondition is not None:
                out["a_priori_precondition_failed"] = 1
            if rec.hit is not None:
                out["forecast_hits" if rec.hit else "forecast_misses"] = 1
            if rec.accounting_violations:
                out["accounting_violations"] = rec.accounting_violations
        return out

    async def _after_round(
        self, spec: TaskSpec, runtime: TaskRuntime, objective: float, proposals: int
    ) -> None:
        ended = books.stop_status(spec, objective, runtime.stalled, proposals)
        why = None
        if ended is None and spec.stop_when is not None:
            ledger = await self._ledger(spec.id)
            why = spec.stop_when.verdict(len(ledger.records), ledger.forecast(spec.stop_when.horizon_rounds))
        if ended is not None:
            await self._finish(
                spec.id,
                ended,
                "stopping rule met ("
                + ("relative gap)" if ended == TaskStatus.OPTIMAL else "stalled rounds)"),
            )
        elif why is not None:
            await self._finish(spec.id, TaskStatus.DIMINISHING_RETURNS, why)
        elif spec.budgets.rounds is not None and runtime.round >= spec.budgets.rounds:
            await self._finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, "rounds budget spent")
        else:
            left = await self._budget_left(spec, runtime, None)
            spent = [k for k in ("tokens", "calls") if left[k] is not None and left[k] <= 0]
            if spent:
                await self._finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, f"{spent[0]} budget spent")

    # -- async mode ---------------------------------------------------------------------
    async def _run_async(self, task_id: str) -> None:
        if await self._handed_off(task_id):
            return
        async with self._lock(task_id):
            try:
                await self._async_locked(task_id)
            except (errors.Conflict, errors.Unavailable) as exc:
                log.warning("task %s: arrival not committed: %s", task_id, exc.message)
                self._built.pop(task_id, None)
            except Exception as exc:
                log.exception("task %s: async merge failed", task_id)
                await self._finish(
                    task_id, TaskStatus.FAILED, f"merge failed: {type(exc).__name__}: {exc}"[:300]
                )

    async def _async_locked(self, task_id: str) -> None:
        spec = await self.spec(task_id)
        async with self._holding_round_lock(task_id) as fence:
            if fence is None:
                return
            for queued in await self.store.pending_proposals(task_id):
                runtime = await self.store.get_runtime(task_id)
                if runtime.status in TERMINAL:
                    return
                head = await self.store.get_head(task_id)
                built = await self._build(spec, head)
                started = time.perf_counter()
                outcome, state_json = await asyncio.to_thread(
                    self._arrival, built, queued.proposal, runtime.round
                )
                window = runtime.window.model_copy(update={"merged": list(runtime.window.merged)})  # tuples
                if (
                    window.opened_at is None
                ):  # the window's forecast is made when it opens, before any scoring
                    window.opened_at, window.start_objective = self.clock(), head.objective
                    window.predicted_gap = (await self._ledger(task_id)).predict_next()
                rec = outcome.record
                window.proposals += 1
                window.accepted += rec.accepted
                window.interfering += rec.interfering
                window.checks += rec.checks
                window.engine_seconds += rec.engine_seconds
                window.eval_seconds += rec.eval_seconds
                v = outcome.verdicts[0]
                if v.status == "accepted" and v.delta is not None:
                    window.merged.append((queued.proposal.predicted_improvement, v.delta))
                new_head = None
                if outcome.committed:
                    snap = outcome.snapshot
                    new_head = _head_of(snap, state_json)
                counters = self._counters(outcome.verdicts, None)
                if rec.merge_kind != "none":
                    counters["merges:independent"] = 1
                await self.store.commit(
                    task_id,
                    Commit(
                        expected_version=head.version,
                        fence=fence,
                        head=new_head,
                        verdicts=outcome.verdicts,
                        runtime=runtime.model_copy(update={"window": window}),
                        counters=counters,
                    ),
                )
                built.snapshot = outcome.snapshot
                self.metrics.scoring_seconds.labels("async").observe(rec.eval_seconds)
                self.metrics.round_seconds.labels("async").observe(time.perf_counter() - started)
                self._notify(task_id)
                ref = books.reference_of(spec)
                if (
                    ref.kind == "optimum"
                    and relative_gap(outcome.snapshot.objective, ref) <= spec.stop_relative_gap
                ):
                    await self._close_window(task_id, fence, force=True)
                    await self._finish(task_id, TaskStatus.OPTIMAL, "stopping rule met (relative gap)")
                    return

    @staticmethod
    def _arrival(built: _Built, p: Proposal, index: int) -> tuple[RoundOutcome, Any]:
        """Score one arrival on the current head, unless something it touches was committed since its base."""
        snap, task, engine = built.snapshot, built.task, built.engine
        since = [b for b, v in enumerate(snap.block_versions) if v > p.base_version and b != p.block]
        if since and 0 <= p.block < task.n_blocks and snap.block_versions[p.block] <= p.base_version:
            try:
                value = engine.admit(snap, p)
            except errors.BlockoptError:
                value = None  # run_round below gives the precise rejection
            if value is not None:
                mine = task.footprint(snap.state, p.block, value)
                for b in since:
                    if mine & task.footprint(snap.state, b, task.block_value(snap.state, b)):
                        verdict = Verdict(
                            proposal_id=p.id,
                            block=p.block,
                            status="rejected",
                            code="stale_footprint",
                            reason=f"its footprint meets block {b}, committed after base version {p.base_version}",
                            round=index,
                            predicted=p.predicted_improvement,
                        )
                        empty = engine.run_round(snap, [], index)
                        return RoundOutcome(snap, empty.record, [verdict], empty.constants, False), None
        outcome = engine.run_round(snap, [p], index)
        state_json = task.dump_state(outcome.snapshot.state) if outcome.committed else None
        return outcome, state_json

    async def _close_window(self, task_id: str, fence: int, force: bool = False) -> bool:
        """Turn the async window into a round record (bookkeeping: the head does not change)."""
        spec = await self.spec(task_id)
        runtime = await self.store.get_runtime(task_id)
        w = runtime.window
        if w.opened_at is None or w.start_objective is None:
            return False
        if not force and self.clock() - w.opened_at < self.settings.round_deadline:
            return False
        head = await self.store.get_head(task_id)
        merged = [MergedScore(pred, act) for pred, act in w.merged]
        consts = round_constants(w.start_objective, head.objective, spec.reference, merged, spec.tolerance)
        # Arrivals merged one at a time, each on the head it was scored on: γ = 1 exactly when the books balance.
        problems = check_accounting(
            consts.gap_before, consts.gap_after, consts.gamma, merged, spec.tolerance, separable=True
        )
        if problems:
            log.error(
                "task %s window %d: books do not balance: %s", task_id, runtime.round, "; ".join(problems)
            )
        predicted = w.predicted_gap
        rec = RoundRecord(
            round=runtime.round,
            version=head.version,
            objective=head.objective,
            gap=head.objective - spec.reference,
            proposals=w.proposals,
            accepted=w.accepted,
            interfering=w.interfering,
            merge_kind="independent" if w.accepted else "none",
            kappa=consts.kappa,
            gamma=consts.gamma,
            delta=consts.delta,
            predicted_gap=predicted,
            hit=None if predicted is None else consts.gap_after <= predicted + spec.tolerance,
            accounting_violations=len(problems),
            checks=w.checks,
            engine_seconds=w.engine_seconds,
            eval_seconds=w.eval_seconds,
        )
        new_runtime = runtime.model_copy(
            update={
                "round": runtime.round + 1,
                "stalled": 0 if w.accepted else runtime.stalled + 1,
                "window": WindowState(),
            }
        )
        counters = {k: v for k, v in self._counters([], rec).items() if not k.startswith("merges:")}
        await self.store.commit(
            task_id,
            Commit(
                expected_version=head.version,
                fence=fence,
                runtime=new_runtime,
                round=RoundEntry(
                    record=rec, bound=books.bound_dict(consts), opened_at=w.opened_at, closed_at=self.clock()
                ),
                counters=counters,
            ),
        )
        self._notify(task_id)
        if not force:
            await self._after_round(spec, new_runtime, head.objective, w.proposals)
        return True

    async def _tick_async_window(self, task_id: str) -> None:
        lock = self._lock(task_id)
        if lock.locked():
            return
        async with lock, self._holding_round_lock(task_id) as fence:
            if fence is None:
                return
            try:
                await self._close_window(task_id, fence)
            except errors.Conflict as exc:
                log.warning("task %s: window not recorded: %s", task_id, exc.message)

    # -- retention ---------------------------------------------------------------------
    async def _evict_if_due(self, task_id: str, runtime: TaskRuntime, now: float) -> None:
        """Delete a task ``retain_finished`` seconds after it ended, so a long-lived service's state stays
        bounded (every replica may try: deleting is idempotent)."""
        retain = self.settings.retain_finished
        if retain is None or runtime.finished_at is None or now - runtime.finished_at < retain:
            return
        if self._lock(task_id).locked():
            return
        try:
            if await self.store.delete_task(task_id):
                log.info(
                    "task %s evicted: finished %.0f s ago (%s)",
                    task_id,
                    now - runtime.finished_at,
                    runtime.status,
                )
        except errors.NotSupported:
            log.warning("the store cannot delete tasks: --retain-finished has no effect")
            self.settings = self.settings.model_copy(update={"retain_finished": None})
            return
        self.forget(task_id)

    def forget(self, task_id: str) -> None:
        """Drop this process's caches of a task that no longer exists."""
        self._built.pop(task_id, None)
        self._specs.pop(task_id, None)
        self._locks.pop(task_id, None)
        self._locks.pop(f"load:{task_id}", None)
        self._notify(task_id)
        for key in [k for k in self._agents if k[0] == task_id]:
            del self._agents[key]

    def cache_sizes(self) -> dict[str, int]:
        """What this process holds per task (the soak benchmark watches these stay bounded)."""
        return {
            "built": len(self._built),
            "specs": len(self._specs),
            "locks": len(self._locks),
            "events": len(self._events),
            "agents": len(self._agents),
            "background": len(self._background),
        }

    # -- scheduler ---------------------------------------------------------------------
    async def _schedule_forever(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("scheduler tick failed")
            await asyncio.sleep(self.settings.tick)

    async def tick(self) -> None:
        """Expire leases, enforce time budgets, close rounds that are due (quorum changes when leases lapse)."""
        now = self.clock()
        for task_id in await self.store.task_ids():
            spec = await self.spec(task_id)
            runtime = await self.store.get_runtime(spec.id)
            if runtime.status in TERMINAL:
                await self._evict_if_due(task_id, runtime, now)
                continue
            expired = await self.store.expire_leases(spec.id, now)
            for lease in expired:
                log.info(
                    "task %s: lease on block %d expired (agent %s silent)", spec.id, lease.block, lease.agent
                )
            if spec.budgets.seconds is not None and now - spec.created_at >= spec.budgets.seconds:
                await self._finish(spec.id, TaskStatus.BUDGET_EXHAUSTED, "seconds budget spent")
                continue
            if spec.mode == "async":
                await self._tick_async_window(spec.id)
            else:
                await self._maybe_close(spec.id)
            if expired:
                self._notify(spec.id)
