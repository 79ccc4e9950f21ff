"""The embedded store: one process, dictionaries behind one lock.

Every method does its whole change without awaiting, so each call is atomic
on the event loop; the lock makes that true for callers on other threads too.
Records are copied in and out, so nobody holds a live reference to the books, except a head's state and a
proposal's value: they are values (the runtime dumps a new state for every commit, a proposal's value is
the body of its request, and neither is changed once written or read), so they are kept and handed out as
they are. Copying the state of a 300-robot plan cost 3.5 ms a commit, and a team commits twice per answer
(the lease's new block, the merge); copying the queued answers each arrival reads was 17 % of an answer's
coordinator CPU with 4 agents (60 paths of [x, y] pairs each).

One job over 400 lines: one class implementing the whole ``Store`` interface (blockopt/testing/stores.py),
kept whole so it reads method by method against the contract and its sibling backends.
"""

from __future__ import annotations

import bisect
import copy
import heapq
import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

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


class _FreeBlocks:
    """Free blocks (not leased, no queued proposal) by least recent lease: a heap with lazy deletion.

    A lease costs O(log n) amortised instead of a scan of every block (agents² work per round). A heap
    entry (seq, block) is live while the block is free and ``seq`` is its latest lease number.
    """

    def __init__(self, n_blocks: int) -> None:
        self.heap: list[tuple[int, int]] = [(-1, b) for b in range(n_blocks)]
        self.free: set[int] = set(range(n_blocks))
        self.seq: dict[int, int] = {}

    def take(self, block: int, seq: int) -> None:
        self.free.discard(block)
        self.seq[block] = seq

    def give(self, block: int) -> None:
        if block not in self.free:
            self.free.add(block)
            heapq.heappush(self.heap, (self.seq.get(block, -1), block))

    def oldest(self) -> int | None:
        heap = self.heap
        while heap:
            seq, block = heap[0]
            if block in self.free and self.seq.get(block, -1) == seq:
                return block
            heapq.heappop(heap)
        return None


@dataclass
class _TaskBooks:
    spec: TaskSpec
    head: Head
    runtime: TaskRuntime = field(default_factory=TaskRuntime)
    leases: dict[int, Lease] = field(default_factory=dict)
    lease_seq: dict[int, int] = field(default_factory=dict)
    seq: int = 0
    pending: dict[str, QueuedProposal] = field(default_factory=dict)
    proposals: dict[str, QueuedProposal] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    rounds: list[RoundEntry] = field(default_factory=list)
    counters: Counter[str] = field(default_factory=Counter)
    usage: dict[tuple[str, str], UsageTotals] = field(default_factory=dict)
    abandoned: dict[str, AbandonedLease] = field(default_factory=dict)
    abandoned_times: list[tuple[float, str]] = field(default_factory=list)
    """(at, id) of every abandoned lease, sorted: ``abandoned_since`` reads only the recent ones."""
    agents: dict[str, AgentRecord] = field(default_factory=dict)
    agents_by_token: dict[str, str] = field(default_factory=dict)
    lock_owner: str | None = None
    lock_fence: int = 0
    lock_expires: float = 0.0
    free: _FreeBlocks = field(default_factory=lambda: _FreeBlocks(0))
    pending_blocks: Counter[int] = field(default_factory=Counter)
    lease_of_agent: dict[str, int] = field(default_factory=dict)
    lease_ids: dict[str, int] = field(default_factory=dict)
    expiry: list[tuple[float, int, str]] = field(default_factory=list)
    """(expires_at, block, lease id) of every lease granted or renewed: lapsed ones pop off the top."""
    arrived: int = 0
    arrivals: list[tuple[float, int, str]] = field(default_factory=list)
    """(received_at, arrival number, proposal id) of every queued proposal: decided ones pop off the top
    when it is read, so the oldest pending one is at the top (``received_at`` need not grow with arrivals)."""

    def drop_lease(self, block: int) -> Lease:
        lease = self.leases.pop(block)
        self.lease_ids.pop(lease.id, None)
        if self.lease_of_agent.get(lease.agent) == block:
            del self.lease_of_agent[lease.agent]
        if not self.pending_blocks.get(block):
            self.free.give(block)
        return lease

    def oldest_pending(self) -> float | None:
        heap = self.arrivals
        while heap and heap[0][2] not in self.pending:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def lapsed_leases(self, now: float) -> int:
        """Leases past their expiry that no call has dropped yet, without dropping them (a read).

        Every held lease has an ``expiry`` entry at its ``expires_at`` (granting and renewing push one, and
        ``_expire`` drops a lease when it pops an entry at or past it), so the lapsed ones are among the
        entries at or before ``now``: the top of the heap, walked down only while entries are that old.
        Every other call pops those first, so the walk is short: O(1) per submission, not O(leases)."""
        heap, leases = self.expiry, self.leases
        lapsed: set[str] = set()
        stack = [0] if heap else []
        while stack:
            k = stack.pop()
            at, block, lease_id = heap[k]
            if at > now:
                continue  # (a heap: everything below is later still)
            lease = leases.get(block)
            if lease is not None and lease.id == lease_id and lease.expires_at <= now:
                lapsed.add(lease_id)
            stack.extend(c for c in (2 * k + 1, 2 * k + 2) if c < len(heap))
        return len(lapsed)


_ATOMS = (str, int, float, bool, type(None))


def _copy_json(value: Any) -> Any:
    """Deep copy of JSON-shaped data (states, values): lists and dicts rebuilt, scalars shared; anything
    else goes through ``copy.deepcopy``. Several times faster than deepcopy on a 256-float state."""
    if isinstance(value, list):
        return [x if isinstance(x, _ATOMS) else _copy_json(x) for x in value]
    if isinstance(value, dict):
        return {k: x if isinstance(x, _ATOMS) else _copy_json(x) for k, x in value.items()}
    return value if isinstance(value, _ATOMS) else copy.deepcopy(value)


def _copy_head(head: Head) -> Head:
    """The head with its own list of block versions; its state is shared (a value: module docstring)."""
    return head.model_copy(update={"block_versions": list(head.block_versions)})


def _copy_runtime(runtime: TaskRuntime) -> TaskRuntime:
    """Fields are scalars except the async window, whose ``merged`` holds immutable tuples: copying the
    list is a deep copy (the generic one cost O(window) deepcopy calls per async arrival)."""
    window = runtime.window.model_copy(update={"merged": list(runtime.window.merged)})
    return runtime.model_copy(update={"window": window})


def _copy_proposal(p: Proposal) -> Proposal:
    """A copy with its own usage; the value is shared (a value: module docstring). ``model_copy(deep=True)``
    was ~12% of the coordinator's CPU per proposal (a generic deepcopy of pydantic internals)."""
    return p.model_copy(update={"usage": p.usage.model_copy()})


def _copy_round(entry: RoundEntry) -> RoundEntry:
    """A copy sharing nothing mutable: the record's scalars are immutable, its selection books and the bound
    are copied (the generic deep copy of every stored round, read each round for the forecast, grew with
    the task's age: 1-2% of a 64-agent coordinator's CPU after 60 rounds)."""
    record = entry.record
    if record.selection is not None:
        record = record.model_copy(update={"selection": record.selection.model_copy(deep=True)})
    else:
        record = record.model_copy()
    return entry.model_copy(update={"record": record, "bound": _copy_json(entry.bound)})


class MemoryStore(Store):
    def __init__(self) -> None:
        self._tasks: dict[str, _TaskBooks] = {}
        self._engines: dict[str, float] = {}
        self._lock = threading.Lock()

    def _books(self, task_id: str) -> _TaskBooks:
        books = self._tasks.get(task_id)
        if books is None:
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)
        return books

    # -- tasks ------------------------------------------------------------
    async def create_task(self, spec: TaskSpec, head: Head) -> None:
        with self._lock:
            if spec.id in self._tasks:
                raise errors.Conflict(f"task '{spec.id}' already exists", task_id=spec.id)
            self._tasks[spec.id] = _TaskBooks(
                spec=spec.model_copy(deep=True),
                head=head.model_copy(deep=True),
                free=_FreeBlocks(spec.n_blocks),
            )

    async def get_task(self, task_id: str) -> TaskSpec:
        with self._lock:
            return self._books(task_id).spec.model_copy(deep=True)

    async def list_tasks(self) -> list[TaskSpec]:
        with self._lock:
            return [b.spec.model_copy(deep=True) for b in self._tasks.values()]

    async def task_ids(self) -> list[str]:
        with self._lock:
            return list(self._tasks)

    async def get_runtime(self, task_id: str) -> TaskRuntime:
        with self._lock:
            # commit() stores a deep copy and the stored runtime is replaced, never changed in place
            # (finish() replaces scalar fields only): a shallow copy is enough and this is read per request
            return self._books(task_id).runtime.model_copy()

    async def finish(self, task_id: str, status: TaskStatus, reason: str, now: float) -> bool:
        with self._lock:
            books = self._books(task_id)
            if books.runtime.status in TERMINAL:
                return False
            books.runtime.status = status
            books.runtime.reason = reason
            books.runtime.finished_at = now
            for block in list(books.leases):
                books.drop_lease(block)
            return True

    async def get_head(self, task_id: str) -> Head:
        with self._lock:
            return _copy_head(self._books(task_id).head)

    async def runtime_and_version(self, task_id: str) -> tuple[TaskRuntime, int]:
        with self._lock:
            books = self._books(task_id)
            return books.runtime.model_copy(), books.head.version

    async def delete_task(self, task_id: str) -> bool:
        with self._lock:
            return self._tasks.pop(task_id, None) is not None

    async def record_count(self) -> int:
        """Records as the SQLite store counts rows: one per task, lease, proposal, round, counter, ..."""
        with self._lock:
            return sum(
                1
                + len(b.leases)
                + len(b.lease_seq)
                + len(b.proposals)
                + len(b.rounds)
                + len(b.counters)
                + len(b.usage)
                + len(b.abandoned)
                + len(b.agents)
                for b in self._tasks.values()
            )

    # -- rounds -------------------------------------------------------------
    async def acquire_round_lock(self, task_id: str, owner: str, ttl: float, now: float) -> int | None:
        with self._lock:
            books = self._books(task_id)
            if books.lock_owner is not None and books.lock_owner != owner and books.lock_expires > now:
                return None
            books.lock_fence += 1
            books.lock_owner = owner
            books.lock_expires = now + ttl
            return books.lock_fence

    async def renew_round_lock(self, task_id: str, fence: int, ttl: float, now: float) -> bool:
        with self._lock:
            books = self._books(task_id)
            if books.lock_fence != fence or books.lock_owner is None:
                return False
            books.lock_expires = now + ttl
            return True

    async def release_round_lock(self, task_id: str, fence: int) -> None:
        with self._lock:
            books = self._books(task_id)
            if books.lock_fence == fence:
                books.lock_owner = None
                books.lock_expires = 0.0

    # -- engines ------------------------------------------------------------
    async def engine_heartbeat(self, owner: str, now: float, ttl: float) -> list[str]:
        with self._lock:
            self._engines[owner] = now + ttl
            self._engines = {o: until for o, until in self._engines.items() if until > now}
            return sorted(self._engines)

    async def engine_leave(self, owner: str) -> None:
        with self._lock:
            self._engines.pop(owner, None)

    async def commit(self, task_id: str, commit: Commit) -> None:
        with self._lock:
            books = self._books(task_id)
            if commit.fence != books.lock_fence or books.lock_owner is None:
                raise errors.StaleFence(
                    f"fencing token {commit.fence} is stale (current {books.lock_fence})", task_id=task_id
                )
            if books.head.version != commit.expected_version:
                raise errors.VersionConflict(
                    f"head is at version {books.head.version}, expected {commit.expected_version}",
                    task_id=task_id,
                    current_version=books.head.version,
                )
            if commit.head is not None:
                if commit.head.version <= books.head.version:
                    raise errors.VersionConflict("a commit must increase the version", task_id=task_id)
                books.head = _copy_head(commit.head)
            for v in commit.verdicts:
                books.verdicts[v.proposal_id] = v.model_copy()
                done = books.pending.pop(v.proposal_id, None)
                if done is not None:
                    block = done.proposal.block
                    books.pending_blocks[block] -= 1
                    if books.pending_blocks[block] <= 0:
                        del books.pending_blocks[block]
                        if block not in books.leases:
                            books.free.give(block)
            if commit.round is not None:
                books.rounds.append(commit.round.model_copy(deep=True))
            runtime = _copy_runtime(commit.runtime)
            if books.runtime.status in TERMINAL:  # a stop landed meanwhile: keep it
                runtime.status, runtime.reason = books.runtime.status, books.runtime.reason
                runtime.finished_at = books.runtime.finished_at
            books.runtime = runtime
            books.counters.update(commit.counters)

    async def rounds(self, task_id: str, since: int = 0) -> list[RoundEntry]:
        with self._lock:
            return [_copy_round(r) for r in self._books(task_id).rounds[since:]]

    async def counters(self, task_id: str) -> dict[str, float]:
        with self._lock:
            return dict(self._books(task_id).counters)

    # -- agents -------------------------------------------------------------
    async def add_agent(self, agent: AgentRecord) -> None:
        with self._lock:
            books = self._books(agent.task_id)
            books.agents[agent.id] = agent.model_copy()
            books.agents_by_token[agent.token_hash] = agent.id

    async def agent_by_token(self, task_id: str, token_hash: str) -> AgentRecord | None:
        with self._lock:
            books = self._tasks.get(task_id)
            if books is None:
                return None
            agent_id = books.agents_by_token.get(token_hash)
            return books.agents[agent_id].model_copy() if agent_id is not None else None

    async def list_agents(self, task_id: str) -> list[AgentRecord]:
        with self._lock:
            return [a.model_copy() for a in self._books(task_id).agents.values()]

    # -- leases ---------------------------------------------------------------
    def _expire(self, books: _TaskBooks, now: float) -> list[Lease]:
        lapsed: list[Lease] = []
        heap = books.expiry
        while heap and heap[0][0] <= now:
            _, block, lease_id = heapq.heappop(heap)
            lease = books.leases.get(block)
            if lease is None or lease.id != lease_id:
                continue  # released, consumed or replaced meanwhile
            if lease.expires_at > now:  # renewed: its newer entry is further down
                continue
            lapsed.append(books.drop_lease(block))
        if lapsed:
            lapsed.sort(key=lambda lease: lease.block)
            books.counters["leases_expired"] += len(lapsed)
        return lapsed

    async def acquire_lease(
        self,
        task_id: str,
        agent: str,
        version: int,
        ttl: float,
        now: float,
        prefer: Sequence[int] | None = None,
    ) -> Lease | None:
        with self._lock:
            books = self._books(task_id)
            self._expire(books, now)
            mine = books.lease_of_agent.get(agent)
            if mine is not None:
                return books.leases[mine].model_copy()
            block = next((b for b in prefer if b in books.free.free), None) if prefer else None
            if block is None:
                block = books.free.oldest()  # least recently leased; ties go to the lowest block
            if block is None:
                return None
            books.seq += 1
            books.lease_seq[block] = books.seq
            books.free.take(block, books.seq)
            lease = Lease.grant(task_id, block, agent, version, now, ttl)
            books.leases[block] = lease
            books.lease_of_agent[agent] = block
            books.lease_ids[lease.id] = block
            heapq.heappush(books.expiry, (lease.expires_at, block, lease.id))
            books.counters["leases_granted"] += 1
            return lease.model_copy()

    def _find_lease(self, books: _TaskBooks, lease_id: str, agent: str, now: float) -> Lease:
        self._expire(books, now)
        block = books.lease_ids.get(lease_id)
        if block is not None:
            lease = books.leases[block]
            if lease.agent != agent:
                raise errors.Forbidden("this lease belongs to another agent", lease_id=lease_id)
            return lease
        raise errors.LeaseExpired("the lease expired or was released; lease a block again", lease_id=lease_id)

    async def renew_lease(self, task_id: str, lease_id: str, agent: str, ttl: float, now: float) -> Lease:
        with self._lock:
            books = self._books(task_id)
            lease = self._find_lease(books, lease_id, agent, now)
            lease.expires_at = now + ttl
            heapq.heappush(books.expiry, (lease.expires_at, lease.block, lease.id))
            return lease.model_copy()

    async def release_lease(self, task_id: str, lease_id: str, agent: str) -> None:
        with self._lock:
            books = self._books(task_id)
            block = books.lease_ids.get(lease_id)
            if block is not None:
                if books.leases[block].agent != agent:
                    raise errors.Forbidden("this lease belongs to another agent", lease_id=lease_id)
                books.drop_lease(block)

    async def active_leases(self, task_id: str, now: float) -> list[Lease]:
        with self._lock:
            books = self._books(task_id)
            return [lease.model_copy() for lease in books.leases.values() if lease.expires_at > now]

    async def expire_leases(self, task_id: str, now: float) -> list[Lease]:
        with self._lock:
            return self._expire(self._books(task_id), now)

    # -- proposals --------------------------------------------------------------
    async def enqueue_proposal(
        self, task_id: str, lease_id: str, proposal: Proposal, now: float
    ) -> tuple[QueuedProposal, bool]:
        with self._lock:
            books = self._books(task_id)
            known = books.proposals.get(proposal.id)
            if known is not None:
                if known.proposal.agent != proposal.agent:
                    raise errors.Conflict("that proposal id is taken", proposal_id=proposal.id)
                return known.model_copy(), False
            lease = self._find_lease(books, lease_id, proposal.agent, now)
            if lease.block != proposal.block:
                raise errors.WrongBlock(
                    f"the lease is for block {lease.block}, not block {proposal.block}",
                    leased_block=lease.block,
                    block=proposal.block,
                )
            books.pending_blocks[lease.block] += 1
            books.drop_lease(lease.block)
            queued = QueuedProposal(proposal=_copy_proposal(proposal), received_at=now)
            books.proposals[proposal.id] = queued
            books.pending[proposal.id] = queued
            books.arrived += 1
            heapq.heappush(books.arrivals, (now, books.arrived, proposal.id))
            books.counters["received"] += 1
            key = (proposal.agent, proposal.usage.model)
            books.usage.setdefault(key, UsageTotals()).add(proposal.usage)
            return queued.model_copy(), True  # stored proposals are never changed in place

    async def pending_proposals(self, task_id: str) -> list[QueuedProposal]:
        with self._lock:
            return [
                q.model_copy(update={"proposal": _copy_proposal(q.proposal)})
                for q in self._books(task_id).pending.values()
            ]

    async def pending_blocks(self, task_id: str) -> list[int]:
        with self._lock:
            return [q.proposal.block for q in self._books(task_id).pending.values()]

    async def get_proposal(self, task_id: str, proposal_id: str) -> tuple[QueuedProposal, Verdict | None]:
        with self._lock:
            books = self._books(task_id)
            queued = books.proposals.get(proposal_id)
            if queued is None:
                raise errors.NotFound(f"no proposal '{proposal_id}' in this task", proposal_id=proposal_id)
            verdict = books.verdicts.get(proposal_id)
            # stored proposals and verdicts are never changed in place: a shallow copy is a copy
            return queued.model_copy(), (verdict.model_copy() if verdict else None)

    async def queue_state(self, task_id: str, now: float) -> QueueState:
        """Read on every submission: kept counts and two heaps' tops, not a scan of every pending proposal and
        lease (blockopt/testing/stores.py checks it against the full recount, ``Store.queue_state``)."""
        with self._lock:
            books = self._books(task_id)
            leases = len(books.leases) - books.lapsed_leases(now)
            return QueueState(len(books.pending), books.oldest_pending(), leases)

    async def usage(self, task_id: str) -> list[UsageRow]:
        with self._lock:
            books = self._books(task_id)
            # (built from stored, already valid fields: no validation per row; read once per round)
            return [
                UsageRow.model_construct(agent=a, model=m, usage=u.model_copy())
                for (a, m), u in books.usage.items()
            ]

    # -- trajectories -------------------------------------------------------------
    async def record_abandoned(self, task_id: str, record: AbandonedLease) -> bool:
        with self._lock:
            books = self._books(task_id)
            if record.id in books.abandoned:
                return False
            books.abandoned[record.id] = record.model_copy(deep=True)
            bisect.insort(books.abandoned_times, (record.at, record.id))
            books.usage.setdefault((record.agent, record.usage.model), UsageTotals()).add(record.usage)
            books.counters["abandoned"] += 1
            books.counters[f"abandoned:{record.failure or record.outcome}"] += 1
            return True

    async def proposal_log(self, task_id: str) -> list[tuple[QueuedProposal, Verdict | None]]:
        with self._lock:
            books = self._books(task_id)  # dicts keep insertion (arrival) order
            verdicts = books.verdicts
            return [
                (q.model_copy(), v.model_copy() if (v := verdicts.get(pid)) else None)
                for pid, q in books.proposals.items()
            ]

    async def abandoned(self, task_id: str) -> list[AbandonedLease]:
        return await self.abandoned_since(task_id, -math.inf)

    async def abandoned_since(self, task_id: str, since: float) -> list[AbandonedLease]:
        with self._lock:
            books = self._books(task_id)
            times = books.abandoned_times
            start = bisect.bisect_right(times, since, key=lambda entry: entry[0])
            return [books.abandoned[i].model_copy() for _, i in times[start:]]
