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
        lease = await self.store.acquire_lease(
            task_id,
            agent.id,
            version,
            self.settings.lease_ttl,
            self.clock(),
            prefer=bandit.block_order(range(spec.n_blocks)) if bandit else None,
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
