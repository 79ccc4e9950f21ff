"""``RedisStore``: the Store interface over one Redis, shared by every coordinator replica.

Each change that must not interleave with another replica's is one Lua script
(``lua.py``): Redis runs a script alone, so lease grants, proposal enqueues
and commits are atomic without client-side locks. Plain reads are single
commands. Key names: ``keys.py``.

Design choices (docs/architecture.md §6, issue 7):

- Proposal queue: a hash of proposals plus a sorted set of pending ids, not a
  Stream with a consumer group. The round lock already makes one replica the
  only consumer, every replica must *read* the whole pending set (quorum), and a
  proposal leaves the queue only inside the fenced commit that gives it a
  verdict; a Stream's per-consumer delivery and XAUTOCLAIM would duplicate what
  the fence does and still need a side index by proposal id.
- Lease and round-lock expiry: timestamps compared inside the scripts against
  the caller's ``now`` (the interface passes it), not Redis key TTLs. Expiry
  must be observable (``expire_leases`` returns and counts lapsed leases; a TTL
  deletes silently), the memory store and this one then pass the same contract
  suite with driven time, and a lapsed lease's block is freed in the same
  atomic step that grants it again. Replica clocks must agree (NTP); a skew of
  s seconds shifts an expiry by s.
- Connection loss: redis-py retries a command with backoff; what still fails
  becomes ``errors.Unavailable`` (503), which agents retry. Retrying a script is
  safe: enqueue is idempotent by proposal id and a commit by its commit id.

One job over 400 lines: one class implementing the whole ``Store`` interface over Redis (its Lua scripts are
in ``lua.py``).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from coordinator import errors
from coordinator.engine.records import Proposal, UsageTotals, Verdict
from coordinator.status import TaskStatus
from coordinator.store.base import (
    TERMINAL,
    AbandonedLease,
    AgentRecord,
    Commit,
    Head,
    Lease,
    QueuedProposal,
    QueueState,
    RoundEntry,
    Store,
    TaskRuntime,
    TaskSpec,
    UsageRow,
)
from coordinator.store.redis import lua
from coordinator.store.redis.commit import CommitArgs, CommitMode, committer
from coordinator.store.redis.keys import DEFAULT_PREFIX, KeySpace

P = ParamSpec("P")
T = TypeVar("T")
USAGE_FIELDS = ("tokens", "prompt_tokens", "completion_tokens", "reasoning_tokens", "calls", "seconds")


def _t(x: float) -> str:
    """A float as the exact decimal string the scripts compare and store."""
    return repr(float(x))


def _reachable(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """Turn a Redis outage that outlived the client's retries into a 503 the agents retry."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise errors.StoreUnavailable(
                f"the redis store cannot be reached: {type(exc).__name__}", retry_after=1.0
            ) from exc

    return wrapper


def _lease(raw: str, task_id: str) -> Lease:
    lid, agent, version, granted, expires, block = json.loads(raw)
    return Lease(
        id=lid,
        task_id=task_id,
        block=int(block),
        agent=agent,
        version=int(version),
        granted_at=float(granted),
        expires_at=float(expires),
    )


class RedisStore(Store):
    def __init__(self, client: Redis, prefix: str = DEFAULT_PREFIX, commit_mode: CommitMode = "lua") -> None:
        self.r = client
        self.keys = KeySpace(prefix)
        self.commit_mode = commit_mode
        self._commit = committer(client, commit_mode)
        s = client.register_script
        self._create = s(lua.CREATE_TASK)
        self._finish = s(lua.FINISH)
        self._lock = s(lua.ACQUIRE_ROUND_LOCK)
        self._relock = s(lua.RENEW_ROUND_LOCK)
        self._unlock = s(lua.RELEASE_ROUND_LOCK)
        self._add_agent = s(lua.ADD_AGENT)
        self._agent_by_token = s(lua.AGENT_BY_TOKEN)
        self._expire = s(lua.EXPIRE_LEASES)
        self._acquire = s(lua.ACQUIRE_LEASE)
        self._renew = s(lua.RENEW_LEASE)
        self._release = s(lua.RELEASE_LEASE)
        self._enqueue = s(lua.ENQUEUE_PROPOSAL)
        self._pending = s(lua.PENDING)
        self._queue_state = s(lua.QUEUE_STATE)
        self._abandon = s(lua.RECORD_ABANDONED)

    @classmethod
    def from_url(
        cls,
        url: str,
        prefix: str = DEFAULT_PREFIX,
        commit_mode: CommitMode = "lua",
        retries: int = 8,
        max_connections: int = 512,
        pool_timeout: float = 20.0,
    ) -> RedisStore:
        """A store on ``redis://HOST:PORT/DB``; commands retry with backoff (~5 s) across a Redis restart.

        The pool blocks when all its connections are busy: redis-py's default pool (100 connections) raised
        ``MaxConnectionsError`` instead, which reached agents as 503s (1,014 lease answers in 32 s with 50
        tasks x 4 agents on one API process; "50 tasks, corrected" in
        docs/notes/2026-12-01-scale-curves-and-service-hot-path.md)."""
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=pool_timeout,  # seconds a command waits for a free connection before it is a 503
            decode_responses=True,
            health_check_interval=5,
            socket_connect_timeout=2.0,
            socket_timeout=10.0,
            retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries),
            retry_on_error=[RedisConnectionError, RedisTimeoutError],
        )
        return cls(Redis.from_pool(pool), prefix, commit_mode)

    @staticmethod
    def _check(reply: list[Any], task_id: str) -> list[Any]:
        """Map a script's refusal to the interface's error."""
        status = reply[0]
        if status in ("ok", "known"):
            return reply
        if status == "not_found":
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)
        if status == "lease_expired":
            raise errors.LeaseExpired("the lease expired or was released; lease a block again")
        if status == "forbidden":
            raise errors.Forbidden("this lease belongs to another agent")
        raise errors.BlockoptError(f"unexpected store reply {status!r}", task_id=task_id)

    async def _read(self, task_id: str, read: Callable[[Any], Any]) -> Any:
        """One round trip: the task's existence and the reads ``read`` queues; NotFound for an unknown task.
        The value of a single read, else the list of values."""
        async with self.r.pipeline(transaction=False) as pipe:
            pipe.exists(self.keys.task(task_id).spec)
            read(pipe)
            exists, *values = await pipe.execute()
        if not exists:
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)
        return values[0] if len(values) == 1 else values

    async def _exists(self, task_id: str) -> None:
        if not await self.r.exists(self.keys.task(task_id).spec):
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)

    # -- tasks ------------------------------------------------------------
    @_reachable
    async def create_task(self, spec: TaskSpec, head: Head) -> None:
        k = self.keys.task(spec.id)
        reply = await self._create(
            keys=[k.spec, k.meta, k.head, k.runtime, self.keys.tasks],
            args=[
                spec.id,
                spec.model_dump_json(),
                spec.n_blocks,
                head.version,
                head.model_dump_json(),
                TaskRuntime().model_dump_json(),
                uuid.uuid4().hex,
            ],
        )
        if reply[0] == "exists":
            raise errors.Conflict(f"task '{spec.id}' already exists", task_id=spec.id)

    @_reachable
    async def get_task(self, task_id: str) -> TaskSpec:
        raw = await self.r.get(self.keys.task(task_id).spec)
        if raw is None:
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)
        return TaskSpec.model_validate_json(raw)

    @_reachable
    async def list_tasks(self) -> list[TaskSpec]:
        ids = await self.r.lrange(self.keys.tasks, 0, -1)
        if not ids:
            return []
        raws = await self.r.mget([self.keys.task(str(i)).spec for i in ids])
        return [TaskSpec.model_validate_json(raw) for raw in raws if raw is not None]

    @_reachable
    async def get_runtime(self, task_id: str) -> TaskRuntime:
        body, end = await self.r.hmget(self.keys.task(task_id).runtime, ["body", "end"])
        if body is None:
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)
        return self._runtime_of(body, end)

    @staticmethod
    def _runtime_of(body: str | bytes, end: str | bytes | None) -> TaskRuntime:
        runtime = TaskRuntime.model_validate_json(body)
        if end is not None:  # a terminal status beats whatever a later commit wrote
            runtime = runtime.model_copy(update=json.loads(end))
        return runtime

    @_reachable
    async def delete_task(self, task_id: str) -> bool:
        k = self.keys.task(task_id)
        async with self.r.pipeline(transaction=True) as pipe:
            pipe.lrem(self.keys.tasks, 0, task_id)
            pipe.delete(*vars(k).values())
            removed, _ = await pipe.execute()
        return bool(removed)

    @_reachable
    async def record_count(self) -> int:
        """Task keys under this deployment's prefix (SCAN: never blocks Redis); the runners' list is not a
        task's record."""
        engines = self.keys.engines.encode()
        keys = [k async for k in self.r.scan_iter(match=f"{self.keys.prefix}*", count=1000)]
        return sum(1 for k in keys if (k if isinstance(k, bytes) else k.encode()) != engines)

    @_reachable
    async def finish(self, task_id: str, status: TaskStatus, reason: str, now: float) -> bool:
        k = self.keys.task(task_id)
        end = json.dumps({"status": status, "reason": reason, "finished_at": now})
        reply = self._check(
            await self._finish(
                keys=[k.runtime, k.leases, k.lease_exp, k.lease_ids, k.lease_agents], args=[end]
            ),
            task_id,
        )
        return bool(reply[1])

    @_reachable
    async def runtime_and_version(self, task_id: str) -> tuple[TaskRuntime, int]:
        k = self.keys.task(task_id)
        async with self.r.pipeline(transaction=False) as pipe:
            pipe.hmget(k.runtime, ["body", "end"])
            pipe.hget(k.head, "version")
            (body, end), version = await pipe.execute()
        if body is None or version is None:
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)
        return self._runtime_of(body, end), int(version)

    @_reachable
    async def get_head(self, task_id: str) -> Head:
        raw = await self.r.hget(self.keys.task(task_id).head, "json")
        if raw is None:
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)
        return Head.model_validate_json(raw)

    # -- rounds -------------------------------------------------------------
    @_reachable
    async def acquire_round_lock(self, task_id: str, owner: str, ttl: float, now: float) -> int | None:
        k = self.keys.task(task_id)
        reply = await self._lock(keys=[k.spec, k.lock, k.fence], args=[owner, _t(now), _t(now + ttl)])
        if reply[0] == "held":
            return None
        return int(self._check(reply, task_id)[1])

    @_reachable
    async def renew_round_lock(self, task_id: str, fence: int, ttl: float, now: float) -> bool:
        return bool(await self._relock(keys=[self.keys.task(task_id).lock], args=[fence, _t(now + ttl)]))

    @_reachable
    async def release_round_lock(self, task_id: str, fence: int) -> None:
        await self._unlock(keys=[self.keys.task(task_id).lock], args=[fence])

    # -- engines ------------------------------------------------------------
    @_reachable
    async def engine_heartbeat(self, owner: str, now: float, ttl: float) -> list[str]:
        async with self.r.pipeline(transaction=True) as pipe:
            pipe.zadd(self.keys.engines, {owner: now + ttl})
            pipe.zremrangebyscore(self.keys.engines, "-inf", now)
            pipe.zrange(self.keys.engines, 0, -1)
            *_, live = await pipe.execute()
        return sorted(o.decode() if isinstance(o, bytes) else o for o in live)

    @_reachable
    async def engine_leave(self, owner: str) -> None:
        await self.r.zrem(self.keys.engines, owner)

    @_reachable
    async def commit(self, task_id: str, commit: Commit) -> None:
        runtime = commit.runtime
        terminal = runtime.status in TERMINAL
        args = CommitArgs(
            commit_id=uuid.uuid4().hex,
            fence=commit.fence,
            expected_version=commit.expected_version,
            new_version=None if commit.head is None else commit.head.version,
            head_json="" if commit.head is None else commit.head.model_dump_json(),
            runtime_body=runtime.model_dump_json(),
            runtime_end=json.dumps(
                {"status": runtime.status, "reason": runtime.reason, "finished_at": runtime.finished_at}
            )
            if terminal
            else "",
            round_json="" if commit.round is None else commit.round.model_dump_json(),
            verdicts=[(v.proposal_id, v.model_dump_json()) for v in commit.verdicts],
            counters=[(name, float(amount)) for name, amount in commit.counters.items()],
        )
        reply = await self._commit(self.keys.task(task_id), args)
        status = reply[0]
        if status == "ok":
            return
        if status == "stale_fence":
            raise errors.StaleFence(
                f"fencing token {commit.fence} is stale (current {reply[1]})", task_id=task_id
            )
        if status == "version_conflict":
            raise errors.VersionConflict(
                f"head is at version {reply[1]}, expected {commit.expected_version}",
                task_id=task_id,
                current_version=int(reply[1]),
            )
        if status == "not_increasing":
            raise errors.VersionConflict("a commit must increase the version", task_id=task_id)
        self._check(reply, task_id)

    @_reachable
    async def rounds(self, task_id: str, since: int = 0) -> list[RoundEntry]:
        k = self.keys.task(task_id)
        raws = await self._read(task_id, lambda p: p.lrange(k.rounds, since, -1))
        return [RoundEntry.model_validate_json(raw) for raw in raws]

    @_reachable
    async def counters(self, task_id: str) -> dict[str, float]:
        k = self.keys.task(task_id)
        flat = await self._read(task_id, lambda p: p.hgetall(k.counters))
        return {name: float(value) for name, value in flat.items()}

    # -- agents -------------------------------------------------------------
    @_reachable
    async def add_agent(self, agent: AgentRecord) -> None:
        k = self.keys.task(agent.task_id)
        reply = await self._add_agent(
            keys=[k.spec, k.agents, k.agent_order, k.tokens],
            args=[agent.id, agent.model_dump_json(), agent.token_hash],
        )
        self._check(reply, agent.task_id)

    @_reachable
    async def agent_by_token(self, task_id: str, token_hash: str) -> AgentRecord | None:
        k = self.keys.task(task_id)
        reply = await self._agent_by_token(keys=[k.tokens, k.agents], args=[token_hash])
        return AgentRecord.model_validate_json(reply[1]) if len(reply) > 1 else None

    @_reachable
    async def list_agents(self, task_id: str) -> list[AgentRecord]:
        await self._exists(task_id)
        k = self.keys.task(task_id)
        ids = await self.r.lrange(k.agent_order, 0, -1)
        if not ids:
            return []
        return [AgentRecord.model_validate_json(raw) for raw in await self.r.hmget(k.agents, ids) if raw]

    # -- leases ---------------------------------------------------------------
    def _lease_keys(self, task_id: str) -> list[str]:
        k = self.keys.task(task_id)
        return [k.spec, k.leases, k.lease_exp, k.lease_ids, k.lease_agents, k.counters]

    @_reachable
    async def acquire_lease(
        self,
        task_id: str,
        agent: str,
        version: int,
        ttl: float,
        now: float,
        prefer: Sequence[int] | None = None,
    ) -> Lease | None:
        k = self.keys.task(task_id)
        reply = self._check(
            await self._acquire(
                keys=[
                    k.meta,
                    k.leases,
                    k.lease_exp,
                    k.lease_ids,
                    k.lease_agents,
                    k.counters,
                    k.lease_seq,
                    k.pending_block,
                ],
                args=[
                    _t(now),
                    agent,
                    version,
                    uuid.uuid4().hex,
                    _t(now + ttl),
                    ",".join(map(str, prefer or ())),
                ],
            ),
            task_id,
        )
        return _lease(reply[1], task_id) if len(reply) > 1 else None

    @_reachable
    async def renew_lease(self, task_id: str, lease_id: str, agent: str, ttl: float, now: float) -> Lease:
        reply = self._check(
            await self._renew(keys=self._lease_keys(task_id), args=[_t(now), lease_id, agent, _t(now + ttl)]),
            task_id,
        )
        return _lease(reply[1], task_id)

    @_reachable
    async def release_lease(self, task_id: str, lease_id: str, agent: str) -> None:
        self._check(await self._release(keys=self._lease_keys(task_id)[:5], args=[lease_id, agent]), task_id)

    @_reachable
    async def active_leases(self, task_id: str, now: float) -> list[Lease]:
        k = self.keys.task(task_id)
        raws = await self._read(task_id, lambda p: p.hvals(k.leases))
        return [lease for lease in (_lease(raw, task_id) for raw in raws) if lease.expires_at > now]

    @_reachable
    async def expire_leases(self, task_id: str, now: float) -> list[Lease]:
        reply = self._check(await self._expire(keys=self._lease_keys(task_id), args=[_t(now)]), task_id)
        return [_lease(raw, task_id) for raw in reply[1:]]

    # -- proposals --------------------------------------------------------------
    @_reachable
    async def enqueue_proposal(
        self, task_id: str, lease_id: str, proposal: Proposal, now: float
    ) -> tuple[QueuedProposal, bool]:
        k = self.keys.task(task_id)
        queued = QueuedProposal(proposal=proposal, received_at=now)
        args: list[str | int | float] = [
            _t(now),
            lease_id,
            proposal.id,
            proposal.agent,
            proposal.block,
            queued.model_dump_json(),
        ]
        totals = UsageTotals()
        totals.add(proposal.usage)
        for name in USAGE_FIELDS:
            args += [json.dumps([proposal.agent, proposal.usage.model, name]), getattr(totals, name)]
        reply = await self._enqueue(
            keys=[
                k.meta,
                k.leases,
                k.lease_exp,
                k.lease_ids,
                k.lease_agents,
                k.counters,
                k.proposals,
                k.pending,
                k.pending_block,
                k.usage,
            ],
            args=args,
        )
        if reply[0] == "known":
            known = QueuedProposal.model_validate_json(reply[1])
            if known.proposal.agent != proposal.agent:
                raise errors.Conflict("that proposal id is taken", proposal_id=proposal.id)
            return known, False
        if reply[0] == "wrong_block":
            raise errors.WrongBlock(
                f"the lease is for block {reply[1]}, not block {proposal.block}",
                leased_block=int(reply[1]),
                block=proposal.block,
            )
        if reply[0] == "lease_expired":
            raise errors.LeaseExpired(
                "the lease expired or was released; lease a block again", lease_id=lease_id
            )
        if reply[0] == "forbidden":
            raise errors.Forbidden("this lease belongs to another agent", lease_id=lease_id)
        self._check(reply, task_id)
        return queued, True

    @_reachable
    async def pending_proposals(self, task_id: str) -> list[QueuedProposal]:
        k = self.keys.task(task_id)
        reply = self._check(await self._pending(keys=[k.spec, k.pending, k.proposals]), task_id)
        return [QueuedProposal.model_validate_json(raw) for raw in reply[1:]]

    @_reachable
    async def queue_state(self, task_id: str, now: float) -> QueueState:
        k = self.keys.task(task_id)
        reply = self._check(
            await self._queue_state(keys=[k.spec, k.pending, k.proposals, k.lease_exp], args=[_t(now)]),
            task_id,
        )
        return QueueState(int(reply[1]), float(reply[2]) if reply[2] else None, int(reply[3]))

    @_reachable
    async def get_proposal(self, task_id: str, proposal_id: str) -> tuple[QueuedProposal, Verdict | None]:
        k = self.keys.task(task_id)
        raw, verdict = await self._read(
            task_id, lambda p: (p.hget(k.proposals, proposal_id), p.hget(k.verdicts, proposal_id))
        )
        if raw is None:
            raise errors.NotFound(f"no proposal '{proposal_id}' in this task", proposal_id=proposal_id)
        return QueuedProposal.model_validate_json(raw), (
            Verdict.model_validate_json(verdict) if verdict else None
        )

    @_reachable
    async def usage(self, task_id: str) -> list[UsageRow]:
        k = self.keys.task(task_id)
        flat = await self._read(task_id, lambda p: p.hgetall(k.usage))
        rows: dict[tuple[str, str], dict[str, float]] = {}
        for field, value in flat.items():
            agent, model, name = json.loads(field)
            rows.setdefault((agent, model), {})[name] = float(value)
        return [
            UsageRow(
                agent=a,
                model=m,
                usage=UsageTotals(**{n: (v if n == "seconds" else int(v)) for n, v in values.items()}),
            )
            for (a, m), values in rows.items()
        ]

    # -- trajectories -------------------------------------------------------------
    @_reachable
    async def record_abandoned(self, task_id: str, record: AbandonedLease) -> bool:
        k = self.keys.task(task_id)
        totals = UsageTotals()
        totals.add(record.usage)
        args: list[str | int | float] = [
            record.id,
            record.model_dump_json(),
            f"abandoned:{record.failure or record.outcome}",
        ]
        for name in USAGE_FIELDS:
            args += [json.dumps([record.agent, record.usage.model, name]), getattr(totals, name)]
        keys = [k.spec, k.abandoned, k.usage, k.counters, k.abandoned_at]
        reply = self._check(await self._abandon(keys=keys, args=args), task_id)
        return reply[0] == "ok"

    @_reachable
    async def proposal_log(self, task_id: str) -> list[tuple[QueuedProposal, Verdict | None]]:
        k = self.keys.task(task_id)
        raws, verdicts = await self._read(task_id, lambda p: (p.hgetall(k.proposals), p.hgetall(k.verdicts)))
        log = [(QueuedProposal.model_validate_json(raw), pid) for pid, raw in raws.items()]
        log.sort(key=lambda item: item[0].received_at)
        return [
            (q, Verdict.model_validate_json(verdicts[pid]) if pid in verdicts else None) for q, pid in log
        ]

    @_reachable
    async def abandoned(self, task_id: str) -> list[AbandonedLease]:
        k = self.keys.task(task_id)
        raws = await self._read(task_id, lambda p: p.hvals(k.abandoned))
        return sorted((AbandonedLease.model_validate_json(raw) for raw in raws), key=lambda a: a.at)

    @_reachable
    async def abandoned_since(self, task_id: str, since: float) -> list[AbandonedLease]:
        """From the ``abandoned_at`` index (records written before it existed are not found here: they
        only fed idle reports)."""
        k = self.keys.task(task_id)
        ids = await self._read(task_id, lambda p: p.zrangebyscore(k.abandoned_at, f"({since!r}", "+inf"))
        raws = [raw for raw in await self.r.hmget(k.abandoned, ids) if raw is not None] if ids else []
        return sorted((AbandonedLease.model_validate_json(raw) for raw in raws), key=lambda a: a.at)

    async def ping(self) -> bool:
        try:
            return bool(await self.r.ping())
        except (RedisConnectionError, RedisTimeoutError):
            return False

    async def close(self) -> None:
        await self.r.aclose()
