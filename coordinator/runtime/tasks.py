"""Tasks: create (the kind prepares it in a thread), view, forecast, report, solution, stop."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from coordinator import errors
from coordinator.engine import forecast as fc
from coordinator.engine.rounds import EngineSettings
from coordinator.reports import books
from coordinator.reports.ledger import Report, relative_gap
from coordinator.runtime import auth, paramcheck
from coordinator.runtime.cache import BuiltTask, TaskCache, head_of
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.events import TaskEvents
from coordinator.runtime.ledgers import Ledgers
from coordinator.runtime.preparing import Preparation, failure_reason, prepare, spec_of, view_of
from coordinator.runtime.steps import StepRunner
from coordinator.runtime.wire import CreateTask, TaskCreated, TaskView
from coordinator.status import TaskStatus
from coordinator.store.base import RegroupAfter, TaskSpec
from tasks.base import Task
from tasks.registry import UnknownKind, kind_class

log = logging.getLogger("blockopt.service")


def _retrieve(job: asyncio.Task[Any]) -> None:
    """Mark a preparation's failure as seen (it is kept as the task's status), or asyncio logs it again."""
    if not job.cancelled():
        job.exception()


@dataclass(eq=False)
class TaskBook:
    """Tasks: create, view, forecast, report, solution, stop."""

    FAILED_KEPT = 1000
    """Failed preparations whose view this process keeps (they never reach the store)."""

    ctx: ServiceContext
    cache: TaskCache
    events: TaskEvents
    steps: StepRunner
    ledgers: Ledgers

    async def create(self, req: CreateTask) -> tuple[TaskSpec, str, str]:
        """The stored spec, the join token and the read token, once the kind has prepared the task."""
        started, job = await self._start(req)
        return await job, started.join_token, started.read_token

    async def begin(self, req: CreateTask) -> TaskCreated:
        """Check the request, start preparing the task in a worker thread and answer within
        ``prepare_wait`` seconds: ``running`` when the kind was that quick, else ``preparing``.

        The task's clock (``created_at``: its seconds budget, elapsed time, stall seconds) starts when the
        request arrives, less the seconds the kind's reference took: the first plan, which a kind may take
        seconds to make, counts against the time limit as a solver's initial solution counts against its
        own; the reference, a yardstick for reports and forecasts and no part of the search, does not (a
        10 s CP-SAT reference left a 10 s run no time). Its seconds are in the reference's provenance
        (``seconds``); ``created_at`` is the request's time plus them, and plus the kind's warm-up (a kind
        compiles its kernels on a fresh install: 5 s of a 10 s run). A request the kind
        refuses within the wait is answered 400 and leaves nothing behind; a kind that raises anything
        else, or refuses later, leaves the task ``failed`` with the reason."""
        return (await self._start(req))[0]

    async def _start(self, req: CreateTask) -> tuple[TaskCreated, asyncio.Task[TaskSpec]]:
        requested = self.ctx.clock()
        if self.ctx.settings.kinds and req.kind not in self.ctx.settings.kinds:
            raise errors.InvalidRequest(
                f"this coordinator serves only {', '.join(self.ctx.settings.kinds)}; not '{req.kind}'",
                field="kind",
            )
        try:
            cls = kind_class(req.kind)
        except UnknownKind as exc:
            raise errors.InvalidRequest(str(exc), field="kind") from None
        knob_fields = paramcheck.check_knobs(req.kind, cls.ProposerParams, req.proposer.knobs)
        knobs = cls.ProposerParams.model_validate(knob_fields)
        params = paramcheck.check(req.kind, cls.Params, req.params, self.ctx.settings.data_dirs)
        # The cleaned values (whole-number floats read as integers) are the ones prepared and stored.
        req = req.model_copy(
            update={"params": params, "proposer": req.proposer.model_copy(update={"knobs": knob_fields})}
        )
        regroup_after = req.regroup_after or ("arrival" if req.mode == "async" else "stalled")
        if regroup_after == "arrival" and req.mode != "async":
            raise errors.InvalidRequest(
                "regroup_after 'arrival' needs mode 'async' "
                "(rounds mode regroups after a round that merged nothing)",
                field="regroup_after",
            )
        task_id = auth.new_id("t")
        join_token, read_token = auth.new_token("join"), auth.new_token("read")
        job = asyncio.create_task(
            self._prepare(
                task_id,
                req,
                knobs,
                regroup_after,
                auth.token_hash(join_token),
                auth.token_hash(read_token),
                requested,
            )
        )
        job.add_done_callback(_retrieve)
        self.cache.memory(task_id).preparation = Preparation(
            task_id, req, requested, auth.token_hash(read_token), job
        )
        # A preparing task lives in this process until it is stored: where several API processes share the
        # port, the answer waits for the store (the loop stays free: the preparation runs in its thread).
        wait = self.ctx.settings.prepare_wait if self.ctx.settings.api_workers == 1 else None
        done, _ = await asyncio.wait({job}, timeout=wait)
        failure = job.exception() if done else None
        if isinstance(failure, errors.BlockoptError):  # refused at once (its parameters): nothing is left
            self.cache.forget(task_id)
            raise failure
        status = TaskStatus.PREPARING if not done else TaskStatus.FAILED if failure else TaskStatus.RUNNING
        return TaskCreated(id=task_id, status=status, join_token=join_token, read_token=read_token), job

    async def _prepare(
        self,
        task_id: str,
        req: CreateTask,
        knobs: Any,
        regroup_after: RegroupAfter,
        join_hash: str,
        read_hash: str,
        requested: float,
    ) -> TaskSpec:
        """Prepare in a thread, then store the task; a failure is kept as the task's ``failed`` status."""
        settings = EngineSettings(
            merge_policy=req.merge_policy, screen_exact_checks=self.ctx.settings.screen_exact_checks
        )
        try:
            ready = await asyncio.to_thread(
                prepare, req.kind, req.params, req.selection, knobs, settings, self.ctx.clock
            )
            budgets = req.budgets
            # a task with a time budget ends by it: one agent closes a round at every search, and 500 of them
            # ended a 120 s routing run at 66-113 s (docs/notes/2026-12-06-the-late-phase.md)
            if budgets.rounds is None and budgets.seconds is None:
                budgets = budgets.model_copy(update={"rounds": self.ctx.settings.default_max_rounds})
            spec = spec_of(
                task_id,
                req,
                ready,
                regroup_after=regroup_after,
                budgets=budgets,
                join_hash=join_hash,
                read_hash=read_hash,
                created_at=requested + (ready.engine.reference.seconds or 0.0) + ready.warm_up_seconds,
            )
            await self.ctx.store.create_task(spec, head_of(ready.snapshot, ready.state_json, version=0))
        except BaseException as exc:
            prep = self.cache.preparation(task_id)
            if prep is not None:
                prep.reason, prep.finished_at = failure_reason(exc), self.ctx.clock()
                self._forget_failed_preparations()
                log.info("task %s: %s", task_id, prep.reason)
            raise
        memory = self.cache.memory(task_id)
        memory.preparation, memory.built = None, BuiltTask(ready.task, ready.engine, ready.snapshot)
        log.info("task %s created: %s (%s, %s)", spec.id, spec.name, spec.merge_policy, spec.mode)
        self.events.notify(task_id)
        return spec

    def _forget_failed_preparations(self) -> None:
        """Keep the newest ``FAILED_KEPT`` failed preparations (they live in this process only)."""
        failed = sorted(
            (p for p in self.cache.preparations() if p.reason is not None), key=lambda p: p.created_at
        )
        for prep in failed[: max(0, len(failed) - self.FAILED_KEPT)]:
            self.cache.forget(prep.id)

    async def read_token_hash(self, task_id: str) -> str:
        """The digest of the task's read token (also while it is preparing)."""
        prep = self.cache.preparation(task_id)
        return prep.read_token_hash if prep is not None else (await self.cache.spec(task_id)).read_token_hash

    async def view(self, task_id: str) -> TaskView:
        prep = self.cache.preparation(task_id)
        if prep is not None:
            return view_of(prep)
        spec = await self.cache.spec(task_id)
        runtime = await self.cache.runtime(task_id)
        head = await self.ctx.store.get_head(task_id)
        built = await self.cache.build(spec, head)
        usage = await self.ctx.store.usage(task_id)
        agents = await self.ctx.store.list_agents(task_id)
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
            feasible=await self.steps.kind_call(built, "feasible", built.task.feasible, built.snapshot.state),
            reference=spec.reference,
            reference_kind=spec.reference_kind,
            merge_policy=spec.merge_policy,
            mode=spec.mode,
            regroup_after=spec.regroup_after,
            blocks=spec.n_blocks,
            agents=len(agents),
            leases=len(await self.ctx.store.active_leases(task_id, self.ctx.clock())),
            budgets=spec.budgets,
            usage={
                "tokens": float(sum(r.usage.tokens for r in usage)),
                "calls": float(sum(r.usage.calls for r in usage)),
            },
            created_at=spec.created_at,
            finished_at=runtime.finished_at,
            forecast=await self.forecast(task_id),
            selection=(b.view() if (b := await self.cache.bandit(spec)) else None),
        )

    async def forecast(self, task_id: str) -> fc.Forecast:
        """The task's forecast from its rounds so far (limit, remaining, ETA, gain per cost)."""
        return (await self.ledgers.ledger(task_id)).forecast(self._horizon(await self.cache.spec(task_id)))

    @staticmethod
    def _horizon(spec: TaskSpec) -> int:
        return spec.stop_when.horizon_rounds if spec.stop_when else 5

    async def views(self) -> list[TaskView]:
        preparing = self.cache.preparations()
        stored = [await self.view(spec.id) for spec in await self.ctx.store.list_tasks()]
        known = {v.id for v in stored}
        return stored + [view_of(p) for p in preparing if p.id not in known]

    async def stop(self, task_id: str) -> TaskView:
        if self.cache.preparation(task_id) is not None:
            await self.cache.spec(task_id)  # still preparing: retry; failed: already ended
        await self.events.finish(task_id, TaskStatus.STOPPED, "stopped by an administrator")
        return await self.view(task_id)

    async def report(self, task_id: str) -> Report:
        spec = await self.cache.spec(task_id)
        runtime = await self.ctx.store.get_runtime(task_id)
        head = await self.ctx.store.get_head(task_id)
        built = await self.cache.build(spec, head)
        return books.task_report(
            spec,
            runtime,
            head,
            await self.ctx.store.rounds(task_id),
            await self.ctx.store.counters(task_id),
            await self.ctx.store.usage(task_id),
            len(await self.ctx.store.list_agents(task_id)),
            await self.steps.kind_call(built, "feasible", built.task.feasible, built.snapshot.state),
        ).model_copy(update={"selection": (b.view() if (b := await self.cache.bandit(spec)) else None)})

    async def solution(self, task_id: str) -> dict[str, Any]:
        spec = await self.cache.spec(task_id)
        head = await self.ctx.store.get_head(task_id)
        built = await self.cache.build(spec, head)
        task, state = built.task, built.snapshot.state
        return {
            "task": task_id,
            "version": head.version,
            "objective": head.objective,
            "feasible": await self.steps.kind_call(built, "feasible", task.feasible, state),
            "solution": await self.steps.kind_call(built, "solution", task.solution, state),
            "state": head.state,
        }

    async def current(self, task_id: str) -> tuple[Task[Any], Any, int]:
        """The task object, its state at the head and the head's version (read-only: the web UI)."""
        spec = await self.cache.spec(task_id)
        built = await self.cache.build(spec, await self.ctx.store.get_head(task_id))
        return built.task, built.snapshot.state, built.snapshot.version
