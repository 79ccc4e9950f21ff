"""Tasks and agents: create, view, report, stop; join with the join token, authenticate agent tokens."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from coordinator import errors
from coordinator.engine import adaptive
from coordinator.engine import forecast as fc
from coordinator.engine.rounds import EngineSettings, RoundEngine
from coordinator.reports import books
from coordinator.reports.ledger import Report, relative_gap
from coordinator.runtime import auth, paramcheck
from coordinator.runtime.core import BuiltTask, head_of, new_id
from coordinator.runtime.proposals import Proposing
from coordinator.runtime.wire import CreateTask, Joined, JoinRequest, TaskView
from coordinator.status import TaskStatus
from coordinator.store.base import AgentRecord, TaskSpec
from tasks.base import Task
from tasks.registry import InvalidParams, UnknownKind, create_task, kind_class

log = logging.getLogger("blockopt.service")


class TaskBook(Proposing):
    """Tasks (create, view, report, stop) and agents (join, authenticate)."""

    async def create(self, req: CreateTask) -> tuple[TaskSpec, str, str]:
        """The stored spec, the join token and the read token (both shown once, stored as digests).

        The task's clock (``created_at``: its seconds budget, elapsed time, stall seconds) starts when the
        request arrives, so the first plan, which a kind may take seconds to make, counts against the
        time limit as a solver's initial solution counts against its own."""
        requested = self.clock()
        if self.settings.kinds and req.kind not in self.settings.kinds:
            raise errors.InvalidRequest(
                f"this coordinator serves only {', '.join(self.settings.kinds)}; not '{req.kind}'",
                field="kind",
            )
        try:
            cls = kind_class(req.kind)
        except UnknownKind as exc:
            raise errors.InvalidRequest(str(exc), field="kind") from None
        knob_fields = paramcheck.check_knobs(req.kind, cls.ProposerParams, req.proposer.knobs)
        knobs = cls.ProposerParams.model_validate(knob_fields)
        params = paramcheck.check(req.kind, cls.Params, req.params, self.settings.data_dirs)
        regroup_after = req.regroup_after or ("arrival" if req.mode == "async" else "stalled")
        if regroup_after == "arrival" and req.mode != "async":
            raise errors.InvalidRequest(
                "regroup_after 'arrival' needs mode 'async' "
                "(rounds mode regroups after a round that merged nothing)",
                field="regroup_after",
            )
        try:
            task = await asyncio.to_thread(create_task, req.kind, params)
        except InvalidParams as exc:
            raise errors.InvalidRequest(str(exc), field=f"params.{exc.param}") from None
        try:
            arms = adaptive.arms_of(req.selection, task.neighbourhoods())
        except ValueError as exc:
            raise errors.InvalidRequest(str(exc), field="selection.generators") from None
        engine = RoundEngine(
            task,
            EngineSettings(
                merge_policy=req.merge_policy, screen_exact_checks=self.settings.screen_exact_checks
            ),
        )
        snap = await asyncio.to_thread(engine.initial_snapshot)
        join_token, read_token = auth.new_token("join"), auth.new_token("read")
        budgets = req.budgets
        if budgets.rounds is None:
            budgets = budgets.model_copy(update={"rounds": self.settings.default_max_rounds})
        spec = TaskSpec(
            id=new_id("t"),
            kind=task.kind,
            name=task.name,
            n_blocks=task.n_blocks,
            params=task.params.model_dump(),
            merge_policy=req.merge_policy,
            mode=req.mode,
            regroup_after=regroup_after,
            budgets=budgets,
            proposer={**req.proposer.model_dump(), "knobs": knob_fields},
            reference=engine.reference.value,
            reference_kind=engine.reference.kind,
            initial_objective=snap.objective,
            tolerance=engine.tolerance,
            window=req.window,
            stop_relative_gap=req.stop.relative_gap,
            stop_stall_rounds=req.stop.stall_rounds,
            stop_stall_seconds=req.stop.stall_seconds,
            stop_lag_rounds=task.lag_rounds(knobs),
            a_priori=engine.a_priori.constants if engine.a_priori else None,
            stop_when=req.stop_when,
            selection=req.selection,
            neighbourhoods=arms,
            join_token_hash=auth.token_hash(join_token),
            read_token_hash=auth.token_hash(read_token),
            created_at=requested,
        )
        head = head_of(snap, task.dump_state(snap.state), version=0)
        await self.store.create_task(spec, head)
        self._built[spec.id] = BuiltTask(task, engine, snap)
        log.info("task %s created: %s (%s, %s)", spec.id, spec.name, spec.merge_policy, spec.mode)
        return spec, join_token, read_token

    async def view(self, task_id: str) -> TaskView:
        spec = await self.spec(task_id)
        runtime = await self._runtime(task_id)
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
            regroup_after=spec.regroup_after,
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
            selection=(b.view() if (b := await self._bandit(spec)) else None),
        )

    async def forecast(self, task_id: str) -> fc.Forecast:
        """The task's forecast from its rounds so far (limit, remaining, ETA, gain per cost)."""
        return (await self._ledger(task_id)).forecast(self._horizon(await self.spec(task_id)))

    @staticmethod
    def _horizon(spec: TaskSpec) -> int:
        return spec.stop_when.horizon_rounds if spec.stop_when else 5

    async def views(self) -> list[TaskView]:
        return [await self.view(spec.id) for spec in await self.store.list_tasks()]

    async def stop(self, task_id: str) -> TaskView:
        await self._finish(task_id, TaskStatus.STOPPED, "stopped by an administrator")
        return await self.view(task_id)

    async def report(self, task_id: str) -> Report:
        spec = await self.spec(task_id)
        runtime = await self.store.get_runtime(task_id)
        head = await self.store.get_head(task_id)
        built = await self._build(spec, head)
        return books.task_report(
            spec,
            runtime,
            head,
            await self.store.rounds(task_id),
            await self.store.counters(task_id),
            await self.store.usage(task_id),
            len(await self.store.list_agents(task_id)),
            built.task.feasible(built.snapshot.state),
        ).model_copy(update={"selection": (b.view() if (b := await self._bandit(spec)) else None)})

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
        """The task object, its state at the head and the head's version (read-only: the web UI)."""
        spec = await self.spec(task_id)
        built = await self._build(spec, await self.store.get_head(task_id))
        return built.task, built.snapshot.state, built.snapshot.version

    async def join(self, task_id: str, join_token: str, req: JoinRequest) -> Joined:
        spec = await self.spec(task_id)
        if not auth.matches(join_token, spec.join_token_hash):
            raise errors.Unauthorized("the join token does not match this task")
        await self._ensure_running(task_id)
        token = auth.new_token("agent")
        agent = AgentRecord(
            id=new_id("a"),
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
