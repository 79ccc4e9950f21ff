"""Async mode: each arrival is scored and merged on its own; rounds are bookkeeping windows.

Optimistic concurrency: an arrival drafted on an older version is scored on the head and merged when it
still improves there (rebased); it is refused as ``stale_footprint`` only when it no longer improves once
blocks committed since its base (``engine/arrival.py`` scores it). The window's record is closed on
the same deadline as a round (``engine.arrival.window_record``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from coordinator import errors
from coordinator.engine.arrival import Arrival, score_arrival, window_record
from coordinator.engine.records import Proposal, keep_point
from coordinator.reports import books
from coordinator.reports.ledger import relative_gap
from coordinator.runtime.cache import BuiltTask, TaskCache, head_of
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.counters import counters_of
from coordinator.runtime.ending import Ending
from coordinator.runtime.events import TaskEvents
from coordinator.runtime.ledgers import Ledgers
from coordinator.runtime.round_lock import RoundLock
from coordinator.runtime.steps import StepRunner
from coordinator.status import TaskStatus
from coordinator.store.base import TERMINAL, Commit, QueuedProposal, RoundEntry, TaskSpec, WindowState
from tasks import capabilities

log = logging.getLogger("blockopt.service")


@dataclass(eq=False)
class AsyncMerges:
    """Async mode: merge each arrival on its own; close windows into round records."""

    ctx: ServiceContext
    cache: TaskCache
    events: TaskEvents
    steps: StepRunner
    round_lock: RoundLock
    ledgers: Ledgers
    ending: Ending

    async def run(self, task_id: str) -> None:
        if await self.events.handed_off(task_id):
            return
        async with self.cache.lock(task_id):
            try:
                await self._run_locked(task_id)
            except (errors.Conflict, errors.Unavailable) as exc:
                log.warning("task %s: arrival not committed: %s", task_id, exc.message)
                self.cache.drop_build(task_id)
            except Exception as exc:
                log.exception("task %s: async merge failed", task_id)
                await self.events.finish(
                    task_id, TaskStatus.FAILED, f"merge failed: {type(exc).__name__}: {exc}"[:300]
                )

    async def _run_locked(self, task_id: str) -> None:
        spec = await self.cache.spec(task_id)
        async with self.round_lock.holding(task_id) as fence:
            if fence is None:
                return
            queue = await self.ctx.store.pending_proposals(task_id)
            for i, queued in enumerate(queue):
                async with self.cache.memory(
                    task_id
                ).blocks_lock:  # (leases wait: see TaskMemory.blocks_lock)
                    if not await self._score_queued(task_id, spec, fence, queued, queue[i + 1 :]):
                        return

    async def _score_queued(
        self, task_id: str, spec: TaskSpec, fence: int, queued: QueuedProposal, behind: list[QueuedProposal]
    ) -> bool:
        """Score and commit one queued arrival; False once the task has ended."""
        runtime = await self.ctx.store.get_runtime(task_id)
        if runtime.status in TERMINAL:
            return False
        head = await self.ctx.store.get_head(task_id)
        built = await self.cache.build(spec, head)
        started = time.perf_counter()
        keep = None
        # held blocks and the blocks of queued answers stay; where leases form their blocks, each block is
        # formed when it is leased instead (``Leases.form``)
        if spec.regroup_after == "arrival" and not self.cache.forms_leases(spec, built.task):
            leased = await self.ctx.store.active_leases(task_id, self.ctx.clock())
            keep = frozenset({lease.block for lease in leased} | {q.proposal.block for q in behind})
        arrival, state_json = await self.steps.engine_step(
            built, scored_arrival, built, queued.proposal, runtime.round, keep
        )
        window = runtime.window.model_copy(  # tuples
            update={"merged": list(runtime.window.merged), "points": list(runtime.window.points)}
        )
        if window.opened_at is None:  # the window's forecast is made when it opens, before any scoring
            window.opened_at, window.start_objective = self.ctx.clock(), head.objective
            window.predicted_gap = await self.ledgers.predict_next(task_id)
        v = arrival.verdict
        # a level merge (``LevelMerges``) moves the head, not the objective: the engine counts it in no merge,
        # the window in ``moved``
        level = v.status == "accepted" and arrival.accepted == 0
        window.proposals += 1
        window.moved += int(level)
        window.accepted += arrival.accepted
        window.interfering += arrival.interfering
        window.checks += arrival.checks
        window.engine_seconds += arrival.engine_seconds
        window.eval_seconds += arrival.eval_seconds
        if v.status == "accepted" and v.delta is not None and not level:
            window.merged.append((queued.proposal.predicted_improvement, v.delta))
        if v.status == "accepted" and not level:  # the anytime curve at the resolution of commits
            point = (round(self.ctx.clock() - spec.created_at, 6), arrival.snapshot.objective)
            window.points = keep_point(window.points, point)
        new_head = head_of(arrival.snapshot, state_json) if arrival.committed else None
        counters = counters_of([v], None)
        if arrival.merge_kind != "none" or level:
            counters["merges:level" if level else "merges:independent"] = 1
        await self.ctx.store.commit(
            task_id,
            Commit(
                expected_version=head.version,
                fence=fence,
                head=new_head,
                verdicts=[v],
                runtime=runtime.model_copy(update={"window": window}),
                counters=counters,
            ),
        )
        built.snapshot = arrival.snapshot
        self.ctx.metrics.scoring_seconds.labels("async").observe(arrival.eval_seconds)
        self.ctx.metrics.round_seconds.labels("async").observe(time.perf_counter() - started)
        self.events.notify(task_id)
        ref = books.reference_of(spec)
        if ref.kind == "optimum" and relative_gap(arrival.snapshot.objective, ref) <= spec.stop_relative_gap:
            await self.close_window(task_id, fence, force=True)
            await self.events.finish(task_id, TaskStatus.OPTIMAL, "stopping rule met (relative gap)")
            return False
        return True

    async def close_window(self, task_id: str, fence: int, force: bool = False) -> bool:
        """Turn the async window into a round record (bookkeeping: the head does not change)."""
        spec = await self.cache.spec(task_id)
        runtime = await self.ctx.store.get_runtime(task_id)
        w = runtime.window
        if w.opened_at is None or w.start_objective is None:
            return False
        if not force and self.ctx.clock() - w.opened_at < self.ctx.settings.round_deadline:
            return False
        head = await self.ctx.store.get_head(task_id)
        rec, consts, problems = window_record(
            runtime.round, head.version, w.start_objective, head.objective, spec.reference, spec.tolerance, w
        )
        if problems:
            log.error(
                "task %s window %d: books do not balance: %s", task_id, runtime.round, "; ".join(problems)
            )
        rec = rec.model_copy(update={**await self.ledgers.times(spec), "merges": list(w.points) or None})
        new_runtime = runtime.model_copy(
            update={
                "round": runtime.round + 1,
                "stalled": 0 if w.accepted else runtime.stalled + 1,
                "last_merge_at": self.ctx.clock() if w.accepted else runtime.last_merge_at,
                "window": WindowState(),
            }
        )
        counters = {k: v for k, v in counters_of([], rec).items() if not k.startswith("merges:")}
        await self.ctx.store.commit(
            task_id,
            Commit(
                expected_version=head.version,
                fence=fence,
                runtime=new_runtime,
                round=RoundEntry(
                    record=rec,
                    bound=books.bound_dict(consts),
                    opened_at=w.opened_at,
                    closed_at=self.ctx.clock(),
                ),
                counters=counters,
            ),
        )
        self.events.notify(task_id)
        if not force:
            await self.ending.after_round(spec, new_runtime, head.objective, w.proposals)
        return True

    async def tick(self, task_id: str) -> None:
        """Close the task's window when its deadline has passed (the scheduler's tick)."""
        lock = self.cache.lock(task_id)
        if lock.locked():
            return
        async with lock, self.round_lock.holding(task_id) as fence:
            if fence is None:
                return
            try:
                await self.close_window(task_id, fence)
            except errors.Conflict as exc:
                log.warning("task %s: window not recorded: %s", task_id, exc.message)


def scored_arrival(
    built: BuiltTask, p: Proposal, index: int, keep: frozenset[int] | None = None
) -> tuple[Arrival, Any]:
    """``score_arrival`` (one engine step), with the new state dumped for the store when it changed."""
    arrival = score_arrival(built.engine, built.snapshot, p, index, keep)
    return arrival, capabilities.dump_state(built.task, arrival.snapshot.state) if arrival.committed else None
