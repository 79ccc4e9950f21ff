"""Leases: an agent leases a free block with its contract, renews it, releases it."""

from __future__ import annotations

import logging

from coordinator import errors
from coordinator.engine.contract import contract_envelope
from coordinator.runtime.window import AsyncWindow
from coordinator.runtime.wire import LeaseGrant
from coordinator.store.base import AgentRecord, Lease

log = logging.getLogger("blockopt.service")


class Leasing(AsyncWindow):
    """Lease a free block with its contract; renew; release."""

    async def lease(self, task_id: str, agent: AgentRecord) -> LeaseGrant:
        spec = await self.spec(task_id)
        # The head's version, not the head: its state is read (and parsed) only when this process has not
        # loaded that version yet; one round trip with the runtime on a networked store.
        runtime, version = await self._runtime_and_version(task_id)
        self._running(task_id, runtime)
        left = await self._check_budget(spec, runtime, agent.id)
        bandit = await self._bandit(spec)
        if bandit is not None and bandit.settings.hold and await self._held(task_id, agent.id):
            raise errors.NoBlockAvailable(
                "your last lease found nothing: new blocks are formed when this round closes; retry shortly",
                retry_after=self.settings.retry_after,
                agent_id=agent.id,
            )
        prefer = bandit.block_order(range(spec.n_blocks)) if bandit else None
        # Not while a commit may regroup the blocks nobody holds: a lease taken meanwhile would hold a
        # block about to change (its answer refused as stale). The version is read again once it is done.
        async with self._regrouping(spec):
            if spec.regroup_after == "arrival":
                _, version = await self._runtime_and_version(task_id)
            lease = await self.store.acquire_lease(
                task_id, agent.id, version, self.settings.lease_ttl, self.clock(), prefer=prefer
            )
        if lease is None:
            raise errors.NoBlockAvailable(
                "every block is leased or awaiting its round; retry shortly",
                retry_after=self.settings.retry_after,
                agent_id=agent.id,
            )
        built = self._built.get(task_id)
        if built is None or built.snapshot.version != version:
            built = await self._build(spec, await self.store.get_head(task_id))
        if (
            lease.version != built.snapshot.version
        ):  # an older lease handed back: show it the head it is on now
            lease = lease.model_copy(update={"version": built.snapshot.version})
        contract = await self._kind_call(
            built, "contract", contract_envelope, built.task, built.snapshot, lease.block, left
        )
        # (every field comes from the store or this process: no validation per lease, the contract's dict
        # of lists included)
        return LeaseGrant.model_construct(
            lease_id=lease.id,
            agent_id=agent.id,
            block=lease.block,
            version=built.snapshot.version,
            expires_at=lease.expires_at,
            ttl=self.settings.lease_ttl,
            contract=contract,
        )

    async def _held(self, task_id: str, agent_id: str) -> bool:
        """Adaptive selection's ``hold``: the agent abandoned a lease (found nothing) since the last round
        closed, less than one round deadline ago. It waits for the round to close, when its block is formed
        anew, rather than search the same block again and keep the round open meanwhile."""
        now = self.clock()
        mine = [a.at for a in await self.store.abandoned(task_id) if a.agent == agent_id]
        if not mine or now - mine[-1] >= self.settings.round_deadline:
            return False
        runtime = await self.store.get_runtime(task_id)
        last = await self.store.rounds(task_id, since=max(0, runtime.round - 1))
        since = last[-1].closed_at if last else (await self.spec(task_id)).created_at
        return mine[-1] > since

    async def renew(self, task_id: str, agent: AgentRecord, lease_id: str) -> Lease:
        await self._ensure_running(task_id)
        return await self.store.renew_lease(
            task_id, lease_id, agent.id, self.settings.lease_ttl, self.clock()
        )

    async def release(self, task_id: str, agent: AgentRecord, lease_id: str) -> None:
        await self.store.release_lease(task_id, lease_id, agent.id)
        self._spawn(self._maybe_close(task_id))
