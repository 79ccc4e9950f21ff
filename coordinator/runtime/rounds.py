"""Rounds mode: a round closes when a quorum of leased blocks has submitted or on its deadline.

A quorum is ``settings.quorum`` of queued + still-leased blocks; ``round_deadline`` runs from the round's
first proposal. Idle reports (leases that ended with nothing to propose) count toward the quorum, so a
task whose agents can no longer improve it closes empty rounds and converges. The engine step runs where
``StepRunner`` says (a worker thread unless the task's last step was cheap).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from coordinator import errors
from coordinator.engine import adaptive
from coordinator.engine.records import Proposal
from coordinator.engine.rounds import RoundOutcome
from coordinator.reports import books
from coordinator.runtime.cache import BuiltTask, TaskCache, head_of
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.counters import counters_of
from coordinator.runtime.ending import Ending
from coordinator.runtime.events import Background, TaskEvents
from coordinator.runtime.ledgers import Ledgers
from coordinator.runtime.round_lock import RoundLock
from coordinator.runtime.steps import StepRunner
from coordinator.status import TaskStatus
from coordinator.store.base import TERMINAL, AbandonedLease, Commit, RoundEntry
from tasks import capabilities

log = logging.getLogger("blockopt.service")


@dataclass(eq=False)
class Rounds:
    """Rounds mode: close a round on quorum or deadline, run it (``StepRunner.engine_step``), commit it."""

    ctx: ServiceContext
    cache: TaskCache
    events: TaskEvents
    background: Background
    steps: StepRunner
    round_lock: RoundLock
    ledgers: Ledgers
    ending: Ending

    async def due(self, task_id: str) -> bool:
        now = self.ctx.clock()
        q = await self.ctx.store.queue_state(task_id, now)
        if q.pending == 0 or q.oldest is None:
            return bool(await self.idle_reports(task_id, now))
        quorum = q.pending >= self.ctx.settings.quorum * (q.pending + q.leases) - 1e-9
        return quorum or now - q.oldest >= self.ctx.settings.round_deadline

    async def idle_reports(self, task_id: str, now: float) -> list[AbandonedLease]:
        """Leases that ended with nothing to propose since the last round, once they make a quorum.

        They are the agents' "nothing found": a round of them closes empty and counts as stalled, so a
        task whose agents can no longer improve it converges instead of waiting for its time limit.
        """
        spec = await self.cache.spec(task_id)
        runtime = await self.ctx.store.get_runtime(task_id)
        last = await self.ctx.store.rounds(task_id, since=max(0, runtime.round - 1))
        since = last[-1].closed_at if last else spec.created_at
        idle = await self.ctx.store.abandoned_since(task_id, since)
        idle_blocks = {a.block for a in idle}
        if not idle_blocks:
            return []
        busy = {lease.block for lease in await self.ctx.store.active_leases(task_id, now)} - idle_blocks
        quorum = len(idle_blocks) >= self.ctx.settings.quorum * (len(idle_blocks) + len(busy)) - 1e-9
        return idle if quorum else []

    async def maybe_close(self, task_id: str) -> None:
        if await self.events.handed_off(task_id):
            return
        if self.cache.lock(task_id).locked():
            return  # the running round re-checks when it is done
        if await self.due(task_id):
            self.background.spawn(self.run(task_id))

    async def run(self, task_id: str) -> None:
        async with self.cache.lock(task_id):
            try:
                ran = await self._run_locked(task_id)
            except errors.Conflict as exc:  # lost a race to another replica: its commit stands
                log.warning("task %s: round not committed: %s", task_id, exc.message)
                self.cache.drop_build(task_id)
                ran = False
            except errors.Unavailable as exc:  # the store is down: the round is retried when it is back
                log.warning("task %s: round not committed: %s", task_id, exc.message)
                self.cache.drop_build(task_id)
                ran = False
            except Exception as exc:  # an engine or task bug: the task fails, the service lives on
                log.exception("task %s: round failed", task_id)
                await self.events.finish(
                    task_id, TaskStatus.FAILED, f"round failed: {type(exc).__name__}: {exc}"[:300]
                )
                ran = False
        if ran:
            await self.maybe_close(task_id)

    async def _run_locked(self, task_id: str) -> bool:
        spec = await self.cache.spec(task_id)
        runtime = await self.ctx.store.get_runtime(task_id)
        if runtime.status in TERMINAL:
            return False
        if not await self.due(task_id):  # (counts pending proposals: no need to read them twice)
            return False
        # (in async mode a round of idle reports regroups as an arrival does: leases wait, as there)
        async with self.round_lock.holding(task_id) as fence, self.cache.regrouping(spec):
            if fence is None:
                return False
            # Read again under the lock: another replica may have run this round meanwhile (a round that
            # merged nothing leaves the version unchanged, so the version check alone would not catch it).
            runtime = await self.ctx.store.get_runtime(task_id)
            if runtime.status in TERMINAL:
                return False
            if not await self.due(task_id):
                return False
            pending = await self.ctx.store.pending_proposals(task_id)
            idle = [] if pending else await self.idle_reports(task_id, self.ctx.clock())
            if not pending and not idle:
                return False
            started = time.perf_counter()
            head = await self.ctx.store.get_head(task_id)
            built = await self.cache.build(spec, head)
            proposals = [q.proposal for q in pending]
            # A regrouping keeps the leased blocks as they are: an agent's work under way (an LLM call, a
            # block leased again right after it answered) stays current. Adaptive selection forms blocks
            # only when every leased block has answered.
            answered = {p.block for p in proposals} | {a.block for a in idle}
            leased = await self.ctx.store.active_leases(task_id, self.ctx.clock())
            busy = [lease for lease in leased if lease.block not in answered]
            keep = frozenset(lease.block for lease in leased)
            predicted = await self.ledgers.predict_next(task_id)  # from earlier rounds, before scoring
            bandit, formed = await self.cache.bandit(spec), list[tuple[str, float]]()
            spent = [(p.block, p.usage.seconds, p.usage.tokens) for p in proposals]
            spent += [(a.block, a.usage.seconds, a.usage.tokens) for a in idle]
            former = None
            if bandit is not None:
                args = (built.task, bandit, task_id, runtime.round, head.objective, spent, formed)
                former = adaptive.former_of(*args)
            # A kind that forms each lease's block at lease time needs no regrouping here: the next lease
            # forms its block from the whole plan anyway (at 16 agents the regrouping was a tenth of the
            # coordinator's CPU), as arrivals do not regroup such a kind either (window.py).
            regroup = not busy if former is not None else not self.cache.forms_leases(spec, built.task)
            outcome, state_json = await self.steps.engine_step(
                built, engine_round, built, proposals, runtime.round, regroup, predicted, former, keep
            )
            rec = outcome.record
            if bandit is not None:  # what the bandit learns from this round, kept in its record
                gains = {  # a screened merge measures its combination, not each proposal: screened gain
                    v.block: (v.delta if v.delta is not None else v.screened) or 0.0
                    for v in outcome.verdicts
                    if v.status == "accepted"
                }
                row = adaptive.row_of(spent, gains, formed[-1] if formed else None)
                rec = rec.model_copy(update={"selection": row})
            rec = rec.model_copy(update=await self.ledgers.times(spec))
            new_runtime = runtime.model_copy(
                update={
                    "round": runtime.round + 1,
                    "stalled": 0 if rec.accepted else runtime.stalled + 1,
                    "last_merge_at": self.ctx.clock() if rec.accepted else runtime.last_merge_at,
                }
            )
            new_head = None
            if outcome.committed:
                snap = outcome.snapshot
                new_head = head_of(snap, state_json)
            entry = RoundEntry(
                record=rec,
                bound=books.bound_dict(outcome.constants),
                opened_at=min([q.received_at for q in pending] + [a.at for a in idle]),
                closed_at=self.ctx.clock(),
            )
            await self.ctx.store.commit(
                task_id,
                Commit(
                    expected_version=head.version,
                    fence=fence,
                    runtime=new_runtime,
                    head=new_head,
                    verdicts=outcome.verdicts,
                    round=entry,
                    counters=counters_of(outcome.verdicts, rec),
                ),
            )
            built.snapshot = outcome.snapshot
            self.ctx.metrics.round_seconds.labels("rounds").observe(time.perf_counter() - started)
            self.ctx.metrics.scoring_seconds.labels("rounds").observe(rec.eval_seconds)
        self.events.notify(task_id)
        await self.ending.after_round(
            spec, new_runtime, rec.objective, rec.proposals + len({a.block for a in idle})
        )
        return True


def engine_round(
    built: BuiltTask,
    proposals: list[Proposal],
    index: int,
    regroup: bool,
    predicted: float | None,
    former: Any = None,
    keep: frozenset[int] = frozenset(),
) -> tuple[RoundOutcome, Any]:
    outcome = built.engine.run_round(
        built.snapshot,
        proposals,
        index,
        regroup=regroup,
        predicted_gap=predicted,
        former=former,
        keep=keep,
    )
    state_json = capabilities.dump_state(built.task, outcome.snapshot.state) if outcome.committed else None
    return outcome, state_json
