"""Agents: join a task with its join token, and authenticate each request's agent token."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator import errors
from coordinator.runtime import auth
from coordinator.runtime.budgets import BudgetKeeper
from coordinator.runtime.cache import TaskCache
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.wire import Joined, JoinRequest
from coordinator.store.base import AgentRecord


@dataclass(eq=False)
class AgentBook:
    ctx: ServiceContext
    cache: TaskCache
    budgets: BudgetKeeper
    limiter: auth.RateLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.limiter = auth.RateLimiter(self.ctx.settings.rate_per_agent, self.ctx.settings.rate_burst)

    async def join(self, task_id: str, join_token: str, req: JoinRequest) -> Joined:
        spec = await self.cache.spec(task_id)
        if not auth.matches(join_token, spec.join_token_hash):
            raise errors.Unauthorized("the join token does not match this task")
        await self.budgets.ensure_running(task_id)
        token = auth.new_token("agent")
        agent = AgentRecord(
            id=auth.new_id("a"),
            task_id=task_id,
            name=req.name or "agent",
            token_hash=auth.token_hash(token),
            proposer=req.proposer,
            model=req.model,
            joined_at=self.ctx.clock(),
        )
        await self.ctx.store.add_agent(agent)
        return Joined(
            agent_id=agent.id,
            token=token,
            lease_ttl=self.ctx.settings.lease_ttl,
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
        agent = self.cache.agent(task_id, digest)
        if agent is None:
            agent = await self.ctx.store.agent_by_token(task_id, digest)
            if agent is None or not auth.matches(token, agent.token_hash):
                await self.cache.spec(task_id)  # 404 for an unknown task, else 401
                raise errors.Unauthorized("the agent token is not valid for this task")
            self.cache.remember_agent(task_id, digest, agent)
        self.limiter.check(agent.id)
        return agent
