"""Rounds mode: a round closes when a quorum of leased blocks has submitted or on its deadline.

A quorum is ``settings.quorum`` of queued + still-leased blocks; ``round_deadline`` runs from the round's
first proposal. Idle reports (leases that ended with nothing to propose) count toward the quorum, so a
task whose agents can no longer improve it closes empty rounds and converges. Heavy engine work runs in
a worker thread; a step whose last run took under ``inline_step_ms`` runs on the loop
(``ServiceCore._engine_step``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from coordinator import errors
from coordinator.engine import adaptive
from coordinator.engine.records import Proposal, RoundRecord, Verdict
from coordinator.engine.rounds import RoundOutcome
from coordinator.reports import books
from coordinator.reports.stopping import stalled_reason
from coordinator.runtime.core import BuiltTask, head_of
from coordinator.runtime.round_lock import RoundLocking
from coordinator.status import TaskStatus
from coordinator.store.base import TERMINAL, AbandonedLease, Commit, RoundEntry, TaskRuntime, TaskSpec

log = logging.getLogger("blockopt.service")


class RoundsMode(RoundLocking):
    """Rounds mode: close a round on quorum or deadline, run it (``_engine_step``), commit it."""

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
        # (in async mode a round of idle reports regroups as an arrival does: leases wait, as there)
        async with self._holding_round_lock(task_id) as fence, self._regrouping(spec):
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
            # A regrouping keeps the leased blocks as they are: an agent's work under way (an LLM call, a
            # block leased again right after it answered) stays current. Adaptive selection forms blocks
            # only when every leased block has answered.
            answered = {p.block for p in proposals} | {a.block for a in idle}
            leased = await self.store.active_leases(task_id, self.clock())
            busy = [lease for lease in leased if lease.block not in answered]
            keep = frozenset(lease.block for lease in leased)
            predicted = await self._predict_next(task_id)  # from earlier rounds, before scoring
            bandit, formed = await self._bandit(spec), list[tuple[str, float]]()
            spent = [(p.block, p.usage.seconds, p.usage.tokens) for p in proposals]
            spent += [(a.block, a.usage.seconds, a.usage.tokens) for a in idle]
            former = None
            if bandit is not None:
                args = (built.task, bandit, task_id, runtime.round, head.objective, spent, formed)
                former = adaptive.former_of(*args)
            regroup = not busy if former is not None else True
            outcome, state_json = await self._engine_step(
                built, self._engine_round, built, proposals, runtime.round, regroup, predicted, former, keep
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
            rec = rec.model_copy(update=await self._times(spec))
            new_runtime = runtime.model_copy(
                update={
                    "round": runtime.round + 1,
                    "stalled": 0 if rec.accepted else runtime.stalled + 1,
                    "last_merge_at": self.clock() if rec.accepted else runtime.last_merge_at,
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

    async def _times(self, spec: TaskSpec) -> dict[str, float]:
        """A closing round's place on the anytime curve: seconds since the task was created, and the
        agent-seconds its agents reported (proposals and abandoned leases) so far."""
        rows = await self.store.usage(spec.id)
        return {
            "t": round(self.clock() - spec.created_at, 6),
            "agent_seconds": round(sum(r.usage.seconds for r in rows), 6),
        }

    @staticmethod
    def _engine_round(
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
        state_json = built.task.dump_state(outcome.snapshot.state) if outcome.committed else None
        return outcome, state_json

    @staticmethod
    def _counters(verdicts: list[Verdict], rec: RoundRecord | None) -> dict[str, float]:
        out: dict[str, float] = {}
        for v in verdicts:
            out[v.status] = out.get(v.status, 0) + 1
            if v.status == "rejected":
                out[f"rejected:{v.code}"] = out.get(f"rejected:{v.code}", 0) + 1
            if v.repaired:
                out["repaired"] = out.get("repaired", 0) + 1
            if v.rebased:
                out["rebased"] = out.get("rebased", 0) + 1
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
        now = self.clock()
        since, records = runtime.last_merge_at, None
        if runtime.stalled >= spec.stop_stall_rounds:  # the stall rule may be met: it reads the curve
            known = await self._known_rounds(spec.id)
            records = [e.record for e in known]
            if since is None and known:  # no merge yet: quiet since the work began, not since the request
                since = known[0].opened_at  # (a kind's preparation may take a good part of the time limit)
        quiet = now - (since or spec.created_at)
        ended = books.stop_status(
            spec, objective, runtime.stalled, proposals, quiet, now - spec.created_at, records
        )
        why = None
        if ended is None and spec.stop_when is not None:
            ledger = await self._ledger(spec.id)
            why = spec.stop_when.verdict(len(ledger.records), ledger.forecast(spec.stop_when.horizon_rounds))
        if ended is not None:
            await self._finish(
                spec.id,
                ended,
                "stopping rule met (relative gap)"
                if ended == TaskStatus.OPTIMAL
                else stalled_reason(runtime.stalled, quiet),
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
