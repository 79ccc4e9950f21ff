"""Leases: an agent leases a free block with its contract, renews it, releases it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from coordinator import errors
from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Snapshot
from coordinator.runtime.budgets import BudgetKeeper, running
from coordinator.runtime.cache import BuiltTask, TaskCache, head_of
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.events import Background, TaskEvents
from coordinator.runtime.round_lock import RoundLock
from coordinator.runtime.rounds import Rounds
from coordinator.runtime.steps import StepRunner
from coordinator.runtime.wire import LeaseGrant
from coordinator.store.base import AbandonedLease, AgentRecord, Commit, Lease, TaskSpec
from tasks import capabilities

log = logging.getLogger("blockopt.service")


@dataclass(eq=False)
class Leases:
    """Lease a free block with its contract; renew; release; record an abandoned lease and release it."""

    ctx: ServiceContext
    cache: TaskCache
    events: TaskEvents
    background: Background
    steps: StepRunner
    round_lock: RoundLock
    budgets: BudgetKeeper
    rounds: Rounds

    async def lease(self, task_id: str, agent: AgentRecord, since: int | None = None) -> LeaseGrant:
        """A free block and its contract; with ``since`` (the version of the contract the agent keeps) the
        contract is written against that one where the kind can (``ContractDeltas``) and this process still
        holds that head (``BuiltTask.recent``), else whole."""
        spec = await self.cache.spec(task_id)
        # The head's version, not the head: its state is read (and parsed) only when this process has not
        # loaded that version yet; one round trip with the runtime on a networked store.
        runtime, version = await self.cache.runtime_and_version(task_id)
        running(task_id, runtime)
        left = await self.budgets.check(spec, runtime, agent.id)
        bandit = await self.cache.bandit(spec)
        if bandit is not None and bandit.settings.hold and await self._held(task_id, agent.id):
            raise errors.NoBlockAvailable(
                "your last lease found nothing: new blocks are formed when this round closes; retry shortly",
                retry_after=self.ctx.settings.retry_after,
                agent_id=agent.id,
            )
        prefer = bandit.block_order(range(spec.n_blocks)) if bandit else None
        # Not while a commit may regroup the blocks nobody holds: a lease taken meanwhile would hold a
        # block about to change (its answer refused as stale). The version is read again once it is done.
        async with self.cache.regrouping(spec):
            if spec.regroup_after == "arrival":
                _, version = await self.cache.runtime_and_version(task_id)
            lease = await self.ctx.store.acquire_lease(
                task_id, agent.id, version, self.ctx.settings.lease_ttl, self.ctx.clock(), prefer=prefer
            )
        if lease is None:
            raise errors.NoBlockAvailable(
                "every block is leased or awaiting its round; retry shortly",
                retry_after=self.ctx.settings.retry_after,
                agent_id=agent.id,
            )
        built = self.cache.built(task_id)
        if built is None or built.snapshot.version != version:
            built = await self.cache.build(spec, await self.ctx.store.get_head(task_id))
        if self.cache.forms_leases(spec, built.task):
            built = await self._form(spec, lease, built)
        if (
            lease.version != built.snapshot.version
        ):  # an older lease handed back: show it the head it is on now
            lease = lease.model_copy(update={"version": built.snapshot.version})
        if capabilities.offers(built.task, capabilities.ContractDeltas):
            built.kept = built.KEPT  # from the first lease on: the next may be written since this one
        kept = None if since is None else built.recent.get(since)
        contract = await self.steps.kind_call(
            built, "contract", contract_envelope, built.task, built.snapshot, lease.block, left, kept
        )
        # (every field comes from the store or this process: no validation per lease, the contract's dict
        # of lists included)
        return LeaseGrant.model_construct(
            lease_id=lease.id,
            agent_id=agent.id,
            block=lease.block,
            version=built.snapshot.version,
            expires_at=lease.expires_at,
            ttl=self.ctx.settings.lease_ttl,
            contract=contract,
        )

    async def next_lease(
        self, task_id: str, agent: AgentRecord, since: int | None = None
    ) -> LeaseGrant | None:
        """The agent's next lease, folded into the reply to its last call (a verdict, an abandoned lease):
        one request per search instead of two. Any reason not to lease (no free block, the task ended, a
        budget spent) leaves it out; the agent's own ``POST /leases`` then reports that reason."""
        try:
            return await self.lease(task_id, agent, since)
        except errors.BlockoptError:
            return None

    async def _form(self, spec: TaskSpec, lease: Lease, built: BuiltTask) -> BuiltTask:
        """The leased block formed anew from the current head (``LeaseNeighbourhoods``), committed as a new
        version with the same objective; the blocks other agents hold, or whose answers wait in the queue,
        keep their members and versions. Under the task's lock and round lock, so no merge runs meanwhile;
        where another replica holds the round lock, the block is leased as it is."""
        task_id = spec.id
        async with self.cache.lock(task_id), self.round_lock.holding(task_id) as fence:
            if fence is None:
                return built
            head = await self.ctx.store.get_head(task_id)
            built = await self.cache.build(spec, head)
            now = self.ctx.clock()
            held = {x.block for x in await self.ctx.store.active_leases(task_id, now) if x.id != lease.id}
            held |= set(await self.ctx.store.pending_blocks(task_id))
            formed = await self.steps.engine_step(built, lease_formed, built, lease.block, frozenset(held))
            if formed is None:
                return built
            snap, state_json = formed
            runtime = await self.ctx.store.get_runtime(task_id)
            await self.ctx.store.commit(
                task_id,
                Commit(
                    expected_version=head.version,
                    fence=fence,
                    runtime=runtime,
                    head=head_of(snap, state_json),
                    counters={"lease_formed": 1},
                ),
            )
            built.snapshot = snap
        self.events.notify(task_id)
        return built

    async def _held(self, task_id: str, agent_id: str) -> bool:
        """Adaptive selection's ``hold``: the agent abandoned a lease (found nothing) since the last round
        closed, less than one round deadline ago. It waits for the round to close, when its block is formed
        anew, rather than search the same block again and keep the round open meanwhile."""
        now = self.ctx.clock()
        recent = await self.ctx.store.abandoned_since(task_id, now - self.ctx.settings.round_deadline)
        mine = [a.at for a in recent if a.agent == agent_id]
        if not mine:
            return False
        runtime = await self.ctx.store.get_runtime(task_id)
        last = await self.ctx.store.rounds(task_id, since=max(0, runtime.round - 1))
        since = last[-1].closed_at if last else (await self.cache.spec(task_id)).created_at
        return mine[-1] > since

    async def renew(self, task_id: str, agent: AgentRecord, lease_id: str) -> Lease:
        await self.budgets.ensure_running(task_id)
        return await self.ctx.store.renew_lease(
            task_id, lease_id, agent.id, self.ctx.settings.lease_ttl, self.ctx.clock()
        )

    async def release(self, task_id: str, agent: AgentRecord, lease_id: str) -> None:
        await self.ctx.store.release_lease(task_id, lease_id, agent.id)
        self.background.spawn(self.rounds.maybe_close(task_id))

    async def abandon(self, task_id: str, agent: AgentRecord, lease_id: str, record: AbandonedLease) -> bool:
        """Record what a lease that found nothing cost and release it; False when the record was already
        there (a retried report). The agent leases its next block after its proposer's ``retry_pause``
        (``agents/worker.py``): a search that is the same on the same contract would find nothing again (with
        8 agents on fixed blocks, abandoned leases took 60 % of the agents' CPU against 46 % with a 0.05 s
        pause; docs/notes/2026-12-05-team-scaling-costs.md); a randomized one asks for its next lease in the
        same request (``next_lease``)."""
        created = await self.ctx.store.record_abandoned(task_id, record)  # on a finished task too: spent
        await self.release(task_id, agent, lease_id)
        return created


def lease_formed(built: BuiltTask, block: int, held: frozenset[int]) -> tuple[Snapshot, Any] | None:
    """The head with ``block`` formed anew (``LeaseNeighbourhoods``) and its state dumped, or None: kept.
    Every block whose members changed gets the new version (a lease on an older one answers stale)."""
    snap, task = built.snapshot, built.task
    state = capabilities.form_lease(task, snap.state, block, held, snap.version)
    if state is None:
        return None
    version = snap.version + 1
    changed = set(capabilities.changed_blocks(task, snap.state, state, len(snap.block_versions)))
    blocks = tuple(version if b in changed else v for b, v in enumerate(snap.block_versions))
    new = Snapshot(version, snap.objective, blocks, state)
    return new, capabilities.dump_state(task, state)
