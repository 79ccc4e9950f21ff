"""The Store interface: every piece of task state, behind async calls a Redis store can implement.

Rules every implementation keeps (``blockopt/testing/stores.py`` checks them):

- ``commit`` is atomic and version-checked: it fails with ``VersionConflict``
  when the head moved past ``expected_version`` and with ``StaleFence`` when
  ``fence`` is not the current round-lock token, so a paused runner never
  commits late. Head, verdicts, consumed proposals, round record, runtime and
  counters change together or not at all.
- ``enqueue_proposal`` consumes the lease and stores the proposal in one step;
  only then is the proposal acknowledged. Re-sending the same proposal id is
  idempotent. A stored proposal leaves the queue only through a commit that
  gives it a verdict.
- Lease expiry is by wall-clock time passed in by the caller (``now``), so
  replicas agree and tests can drive time.

One job over 400 lines: the one interface every backend implements, with the records it stores; split, a
backend author would read it in pieces.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from coordinator import errors
from coordinator.engine.forecast import StopWhen
from coordinator.engine.records import MergePolicy, Proposal, RoundRecord, Usage, UsageTotals, Verdict
from coordinator.engine.selection_settings import SelectionSettings
from coordinator.json_integers import WholeNumbers
from coordinator.status import TERMINAL as TERMINAL  # re-exported: stores and the service read it here
from coordinator.status import TaskStatus

TaskMode = Literal["rounds", "async"]
RegroupAfter = Literal["stalled", "arrival"]
"""When the coordinator asks the kind to regroup the blocks nobody holds (``Regrouping.regroup``): after a round
that merged nothing, or (async mode) after every arrival."""


class Budgets(WholeNumbers):
    """Task budgets; None means unlimited. Exceeding one gives 429 budget_exceeded."""

    model_config = ConfigDict(strict=True)  # part of a request body: false is not 0

    rounds: int | None = Field(None, ge=1)
    seconds: float | None = Field(
        None, gt=0, description="wall time from the create request, the kind's first plan included"
    )
    tokens: int | None = Field(None, ge=0)
    calls: int | None = Field(None, ge=0)
    agent_tokens: int | None = Field(None, ge=0, description="per agent")
    agent_calls: int | None = Field(None, ge=0, description="per agent")


class TaskSpec(BaseModel):
    """What a task is: fixed at creation. A replica rebuilds the Task from (kind, params)."""

    id: str
    kind: str
    name: str
    n_blocks: int
    params: dict[str, Any]
    merge_policy: MergePolicy
    mode: TaskMode
    regroup_after: RegroupAfter = "stalled"
    """``arrival``: async mode regroups the blocks nobody holds after every arrival, so the next lease sees
    the variables in its way; ``stalled``: only after an empty round (what tasks stored earlier did)."""
    budgets: Budgets
    proposer: dict[str, Any]
    reference: float
    reference_kind: str
    reference_provenance: dict[str, Any] = Field(default_factory=dict)
    """How the reference was obtained (``Reference.provenance``: solver, workers, seed, time limit, proven)."""
    initial_objective: float
    tolerance: float
    window: int
    stop_relative_gap: float
    stop_stall_rounds: int
    stop_stall_seconds: float | None = None
    """With it, stalled rounds stop the task only once no round merged for this long (``StopSpec``)."""
    stop_lag_rounds: int = 0
    """Empty rounds the kind's proposer may have while converging (stale views catching up): added to the
    stall rule, as ``run_inproc`` does."""
    join_token_hash: str
    read_token_hash: str = ""
    """Digest of the task's read token ("" for tasks stored before read tokens existed: admin and agents only)."""
    created_at: float
    a_priori: dict[str, float] | None = None
    """The kind's a priori constants (``APrioriBound.a_priori``), for reports."""
    stop_when: StopWhen | None = None
    selection: SelectionSettings = Field(default_factory=SelectionSettings)
    """Adaptive block selection (``coordinator/engine/adaptive.py``); the default is today's lease order."""
    neighbourhoods: list[str] = Field(default_factory=list)
    """The kind's neighbourhood generators (``Neighbourhoods.neighbourhoods``), fixed at creation."""


class WindowState(BaseModel):
    """Async mode: the bookkeeping window that becomes the next round record."""

    opened_at: float | None = None
    start_objective: float | None = None
    proposals: int = 0
    accepted: int = 0
    """Merges that improved the objective."""
    moved: int = 0
    """Level merges (``LevelMerges``): the head moved with an agent's search, the objective did not."""
    interfering: int = 0
    checks: int = 0
    merged: list[tuple[float, float]] = Field(default_factory=list)
    """(predicted, measured) improvement of each merge in the window."""
    points: list[tuple[float, float]] = Field(default_factory=list)
    """(seconds since creation, objective after it) of each merge in the window, bounded (``keep_point``)."""
    predicted_gap: float | None = None
    """The window's one-step forecast, made when it opened."""
    engine_seconds: float = 0.0
    eval_seconds: float = 0.0


class TaskRuntime(BaseModel):
    status: TaskStatus = TaskStatus.RUNNING
    reason: str | None = None
    round: int = 0
    """Rounds recorded so far (the next round's index)."""
    stalled: int = 0
    last_merge_at: float | None = None
    """When a round (or async window) last merged; None: none has yet."""
    finished_at: float | None = None
    window: WindowState = Field(default_factory=WindowState)


class Head(BaseModel):
    """The committed state x_t as ``Persistence.dump_state`` JSON, with its version bookkeeping."""

    version: int
    objective: float
    block_versions: list[int]
    state: Any


class Lease(BaseModel):
    id: str
    task_id: str
    block: int
    agent: str
    version: int
    granted_at: float
    expires_at: float

    @classmethod
    def grant(cls, task_id: str, block: int, agent: str, version: int, now: float, ttl: float) -> Lease:
        """A new lease with a fresh id (every store grants them the same way)."""
        return cls(
            id=uuid.uuid4().hex,
            task_id=task_id,
            block=block,
            agent=agent,
            version=version,
            granted_at=now,
            expires_at=now + ttl,
        )


class AgentRecord(BaseModel):
    id: str
    task_id: str
    name: str
    token_hash: str
    proposer: str = "heuristic"
    model: str = "heuristic"
    joined_at: float


class QueuedProposal(BaseModel):
    proposal: Proposal
    received_at: float


class RoundEntry(BaseModel):
    record: RoundRecord
    bound: dict[str, Any] | None = None
    """``RoundBound`` fields, so a ledger can be rebuilt from the store."""
    opened_at: float | None = None
    closed_at: float


class AbandonedLease(BaseModel):
    """A lease that ended without a proposal (the model declined, or its answer never validated).

    Its tokens and calls were spent all the same, so they count in the task's
    usage and budgets, and it is a line of the trajectory export.
    """

    id: str
    agent: str
    block: int
    base_version: int
    outcome: Literal["declined", "failed"]
    failure: str | None = None
    """Machine-readable kind of the failure (``malformed_json``, ``timeout``, ...)."""
    reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    at: float


class UsageRow(BaseModel):
    agent: str
    model: str
    usage: UsageTotals


@dataclass(frozen=True)
class QueueState:
    """What the round policy needs on every submission: counts, not records."""

    pending: int
    oldest: float | None
    """``received_at`` of the oldest pending proposal."""
    leases: int


@dataclass
class Commit:
    """One atomic change of a task's books (see ``Store.commit``)."""

    expected_version: int
    fence: int
    runtime: TaskRuntime
    head: Head | None = None
    """None: the head does not change (a round that merged nothing, a rejected arrival)."""
    verdicts: list[Verdict] = field(default_factory=list)
    """Verdicts of consumed proposals: they leave the queue."""
    round: RoundEntry | None = None
    counters: dict[str, float] = field(default_factory=dict)
    """Increments of the task's counters (``accepted``, ``rejected:<code>``, ``merges:<kind>``, ...)."""


class Store(abc.ABC):
    """Async task-state store. Errors are from ``coordinator.errors`` (NotFound, Conflict, ...)."""

    # -- tasks ------------------------------------------------------------
    @abc.abstractmethod
    async def create_task(self, spec: TaskSpec, head: Head) -> None: ...

    @abc.abstractmethod
    async def get_task(self, task_id: str) -> TaskSpec:
        """The spec, or NotFound."""

    @abc.abstractmethod
    async def list_tasks(self) -> list[TaskSpec]: ...

    @abc.abstractmethod
    async def get_runtime(self, task_id: str) -> TaskRuntime: ...

    @abc.abstractmethod
    async def finish(self, task_id: str, status: TaskStatus, reason: str, now: float) -> bool:
        """Move a running task to a terminal status; False when it had already ended."""

    @abc.abstractmethod
    async def get_head(self, task_id: str) -> Head: ...

    async def runtime_and_version(self, task_id: str) -> tuple[TaskRuntime, int]:
        """The runtime and the head's version, without the head's state: what a lease needs (a backend
        over the network overrides it with one round trip)."""
        return await self.get_runtime(task_id), (await self.get_head(task_id)).version

    # -- rounds -------------------------------------------------------------
    @abc.abstractmethod
    async def acquire_round_lock(self, task_id: str, owner: str, ttl: float, now: float) -> int | None:
        """A fencing token (strictly increasing per task) or None when another owner holds the lock."""

    @abc.abstractmethod
    async def renew_round_lock(self, task_id: str, fence: int, ttl: float, now: float) -> bool:
        """Extend the lock to ``now + ttl`` if ``fence`` still holds it; False when it was lost."""

    @abc.abstractmethod
    async def release_round_lock(self, task_id: str, fence: int) -> None: ...

    # -- engines ------------------------------------------------------------
    @abc.abstractmethod
    async def engine_heartbeat(self, owner: str, now: float, ttl: float) -> list[str]:
        """Mark the round runner ``owner`` alive until ``now + ttl``; every runner alive at ``now``, sorted.

        Runners share the tasks by this list (``runtime/shards.py``), so a runner that stops beating
        loses its tasks when its beat lapses, as a dead holder loses the round lock."""

    @abc.abstractmethod
    async def engine_leave(self, owner: str) -> None:
        """Drop ``owner`` from the live runners at once (a clean shutdown hands its tasks over)."""

    @abc.abstractmethod
    async def commit(self, task_id: str, commit: Commit) -> None:
        """Apply ``commit`` atomically, or raise VersionConflict / StaleFence and change nothing."""

    @abc.abstractmethod
    async def rounds(self, task_id: str, since: int = 0) -> list[RoundEntry]: ...

    @abc.abstractmethod
    async def counters(self, task_id: str) -> dict[str, float]: ...

    # -- agents -------------------------------------------------------------
    @abc.abstractmethod
    async def add_agent(self, agent: AgentRecord) -> None: ...

    @abc.abstractmethod
    async def agent_by_token(self, task_id: str, token_hash: str) -> AgentRecord | None: ...

    @abc.abstractmethod
    async def list_agents(self, task_id: str) -> list[AgentRecord]: ...

    # -- leases ---------------------------------------------------------------
    @abc.abstractmethod
    async def acquire_lease(
        self,
        task_id: str,
        agent: str,
        version: int,
        ttl: float,
        now: float,
        prefer: Sequence[int] | None = None,
    ) -> Lease | None:
        """The agent's active lease if it has one, else a free block (not leased, no queued
        proposal); None when every block is taken.

        Which free block: the first free one in ``prefer`` (adaptive selection's order, best first), else
        (no preference, or none of it free) the least recently leased, ties to the lowest block."""

    @abc.abstractmethod
    async def renew_lease(self, task_id: str, lease_id: str, agent: str, ttl: float, now: float) -> Lease:
        """LeaseExpired when it lapsed or is unknown; Forbidden when another agent holds it."""

    @abc.abstractmethod
    async def release_lease(self, task_id: str, lease_id: str, agent: str) -> None: ...

    @abc.abstractmethod
    async def active_leases(self, task_id: str, now: float) -> list[Lease]: ...

    @abc.abstractmethod
    async def expire_leases(self, task_id: str, now: float) -> list[Lease]:
        """Drop lapsed leases (their blocks become free) and count them."""

    # -- proposals --------------------------------------------------------------
    @abc.abstractmethod
    async def enqueue_proposal(
        self, task_id: str, lease_id: str, proposal: Proposal, now: float
    ) -> tuple[QueuedProposal, bool]:
        """Consume the lease and store the proposal atomically; (stored, created).

        A proposal id already stored returns it with created=False (idempotent
        retry). Otherwise LeaseExpired when the lease is gone, Forbidden when it
        belongs to another agent, WrongBlock when it is for another block.
        """

    @abc.abstractmethod
    async def pending_proposals(self, task_id: str) -> list[QueuedProposal]:
        """Stored proposals without a verdict, oldest first."""

    @abc.abstractmethod
    async def get_proposal(self, task_id: str, proposal_id: str) -> tuple[QueuedProposal, Verdict | None]: ...

    @abc.abstractmethod
    async def usage(self, task_id: str) -> list[UsageRow]: ...

    # -- cheap reads (defaults from the calls above; stores override them to avoid copying records) ----
    async def task_ids(self) -> list[str]:
        """Every task's id (the scheduler walks these each tick)."""
        return [spec.id for spec in await self.list_tasks()]

    async def pending_blocks(self, task_id: str) -> list[int]:
        """The blocks of the stored proposals without a verdict, oldest first (read on every lease formed:
        the values are not needed, and copying every queued value per lease grew with the team)."""
        return [q.proposal.block for q in await self.pending_proposals(task_id)]

    async def queue_state(self, task_id: str, now: float) -> QueueState:
        """Pending proposals and active leases, counted (checked on every submission)."""
        pending = await self.pending_proposals(task_id)
        leases = await self.active_leases(task_id, now)
        return QueueState(len(pending), min((q.received_at for q in pending), default=None), len(leases))

    # -- trajectories (defaults keep a store written against the older interface running) ------------
    async def record_abandoned(self, task_id: str, record: AbandonedLease) -> bool:
        """Keep ``record`` and add its usage to the task's usage rows, once per id; True when new."""
        raise errors.NotSupported("this store does not record abandoned leases")

    async def proposal_log(self, task_id: str) -> list[tuple[QueuedProposal, Verdict | None]]:
        """Every acknowledged proposal with its verdict (None while pending), in arrival order."""
        raise errors.NotSupported("this store does not export trajectories")

    async def abandoned(self, task_id: str) -> list[AbandonedLease]:
        """Every recorded abandoned lease, oldest (``at``) first."""
        return []

    async def abandoned_since(self, task_id: str, since: float) -> list[AbandonedLease]:
        """The abandoned leases recorded after ``since`` (``at > since``), oldest first. The scheduler reads
        them on every tick: a long run abandons thousands, and reading them all each time took 42 % of the
        coordinator's CPU at 16 agents. This default filters ``abandoned``; the stores here read only those."""
        return [a for a in await self.abandoned(task_id) if a.at > since]

    # -- retention and sizing (defaults keep an older third-party store running) ----------------------
    async def delete_task(self, task_id: str) -> bool:
        """Forget the task and everything recorded under it (retention of finished tasks); False if unknown."""
        raise errors.NotSupported("this store cannot delete tasks")

    async def record_count(self) -> int | None:
        """How many records (rows, keys) the store holds: the soak benchmark's measure of bounded state."""
        return None

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        return None
