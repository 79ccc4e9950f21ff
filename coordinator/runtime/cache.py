"""This process's memory of each task: one ``TaskMemory`` per task, all of it rebuildable from the store.

All state is in the store. A process keeps, per task, what it would otherwise read or rebuild on every
request: the spec (fixed at creation), the built ``Task`` and the head it last loaded, adaptive
selection, the rounds read so far, verified agents, and the locks that let one round run at a time
here. Forgetting a task is one call (``TaskCache.forget``).
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AbstractAsyncContextManager
from dataclasses import InitVar, dataclass, field
from typing import Any, ClassVar

from coordinator import errors
from coordinator.engine import adaptive
from coordinator.engine.records import Snapshot
from coordinator.engine.rounds import EngineSettings, RoundEngine
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.events import TaskEvents
from coordinator.runtime.preparing import Preparation
from coordinator.store.base import AgentRecord, Head, RoundEntry, TaskRuntime, TaskSpec
from tasks import capabilities
from tasks.base import Task
from tasks.registry import create_task


@dataclass
class BuiltTask:
    """A task rebuilt from (kind, params) in this process, the head it last loaded, and the ones before."""

    task: Task[Any]
    engine: RoundEngine
    initial: InitVar[Snapshot]
    step_seconds: float | None = None
    """Wall time of this task's last engine step (None: never run, so the first one goes to a thread)."""
    call_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of the last call into the kind outside engine steps, by what it was (``StepRunner``)."""
    recent: dict[int, Snapshot] = field(default_factory=dict)
    """The last ``kept`` heads this process loaded or committed, by version: ``GET .../changes`` tells an
    agent what changed since the one its search is on (a dict keeps insertion order: oldest first)."""
    kept: int = 1
    """How many heads ``recent`` keeps: the head alone until an agent first asks for changes or leases from a
    kind that writes contracts since an agent's last (``KEPT`` from then on), so that a task nobody follows
    holds no old states (a state may hold large indexes)."""
    KEPT: ClassVar[int] = 32

    def __post_init__(self, initial: Snapshot) -> None:
        self._snapshot = initial
        self.recent[initial.version] = initial

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @snapshot.setter
    def snapshot(self, snap: Snapshot) -> None:
        self._snapshot = snap
        recent = self.recent
        recent[snap.version] = snap
        while len(recent) > self.kept:
            del recent[next(iter(recent))]


def head_of(snap: Snapshot, state: Any, version: int | None = None) -> Head:
    """The stored head of a committed snapshot (``state`` already dumped to JSON)."""
    return Head(
        version=snap.version if version is None else version,
        objective=snap.objective,
        block_versions=list(snap.block_versions),
        state=state,
    )


def snapshot_of(task: Task[Any], head: Head) -> Snapshot:
    return Snapshot(
        head.version, head.objective, tuple(head.block_versions), capabilities.load_state(task, head.state)
    )


@dataclass
class TaskMemory:
    """What this process holds of one task."""

    spec: TaskSpec | None = None
    preparation: Preparation | None = None
    """Set while the kind prepares the task (or after it failed to): the task is not stored."""
    built: BuiltTask | None = None
    bandit: adaptive.Bandit | None = None
    """Adaptive selection: rebuildable, replayed from the stored rounds (``TaskCache.bandit``)."""
    rounds: list[RoundEntry] = field(default_factory=list)
    """Round entries read so far: stored rounds never change, so each read adds only the new ones."""
    agents: dict[str, AgentRecord] = field(default_factory=dict)
    """Token digest -> verified agent (``AgentBook.authenticate``)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One round, arrival merge or lease formation at a time in this process."""
    load_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One build, and one load per new head, however many requests ask at once."""
    blocks_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while an arrival may regroup the blocks nobody holds, and while a lease is taken (this
    process's leases; another replica's lease meanwhile makes at worst a ``stale_base`` answer)."""


@dataclass(eq=False)
class TaskCache:
    """Each task's ``TaskMemory``, filled from the store on first use."""

    AGENT_CACHE: ClassVar[int] = 100_000
    """Verified agents cached per process (cleared when full)."""

    ctx: ServiceContext
    events: TaskEvents
    _tasks: dict[str, TaskMemory] = field(default_factory=dict, init=False)
    _agents: int = field(default=0, init=False)

    def memory(self, task_id: str) -> TaskMemory:
        """The task's memory (made empty on first use: call it for a task known to exist)."""
        return self._tasks.setdefault(task_id, TaskMemory())

    def known(self) -> list[str]:
        """Tasks whose spec this process has read (the scheduler forgets those gone from the store)."""
        return [task_id for task_id, m in self._tasks.items() if m.spec is not None]

    def preparations(self) -> list[Preparation]:
        return [m.preparation for m in self._tasks.values() if m.preparation is not None]

    def preparation(self, task_id: str) -> Preparation | None:
        m = self._tasks.get(task_id)
        return None if m is None else m.preparation

    def built(self, task_id: str) -> BuiltTask | None:
        m = self._tasks.get(task_id)
        return None if m is None else m.built

    def drop_build(self, task_id: str) -> None:
        """After a lost race or a store outage: the next step loads the head again."""
        m = self._tasks.get(task_id)
        if m is not None:
            m.built = None

    async def spec(self, task_id: str) -> TaskSpec:
        """The task's spec (fixed at creation, so cached per process; NotFound when unknown)."""
        m = self._tasks.get(task_id)
        if m is not None and m.spec is not None:
            return m.spec
        prep = None if m is None else m.preparation
        if prep is not None and prep.reason is None:
            raise errors.TaskPreparing(
                "the task is being prepared (its kind computes its reference and first plan); retry shortly",
                retry_after=self.ctx.settings.prepare_retry_after,
            )
        if prep is not None:
            raise errors.TaskFinished(
                f"the task has ended (failed): {prep.reason}", task_id=task_id, status=prep.status
            )
        spec = await self.ctx.store.get_task(task_id)
        self.memory(task_id).spec = spec
        return spec

    async def runtime(self, task_id: str) -> TaskRuntime:
        """The task's runtime. A task gone from the store (evicted by another process: an API process of
        the split mode never evicts) leaves this process's memory too, or its spec and build would stay."""
        try:
            return await self.ctx.store.get_runtime(task_id)
        except errors.NotFound:
            self.forget(task_id)
            raise

    async def runtime_and_version(self, task_id: str) -> tuple[TaskRuntime, int]:
        """``runtime`` and the head's version in one store call (what a lease reads)."""
        try:
            return await self.ctx.store.runtime_and_version(task_id)
        except errors.NotFound:
            self.forget(task_id)
            raise

    def lock(self, task_id: str) -> asyncio.Lock:
        return self.memory(task_id).lock

    def regrouping(self, spec: TaskSpec) -> AbstractAsyncContextManager[Any]:
        """The blocks lock where any commit may regroup the blocks nobody holds (``regroup_after:
        arrival``): an arrival, or a round of idle reports run through the rounds path; else nothing."""
        if spec.regroup_after == "arrival":
            return self.memory(spec.id).blocks_lock
        return contextlib.nullcontext()

    def forms_leases(self, spec: TaskSpec, task: Task[Any]) -> bool:
        """Whether this service forms each lease's block at lease time (``LeaseNeighbourhoods``): an async
        task of a kind that offers it, where leases and merges run in one process. In the split mode the API
        processes lease and the engines merge: a lease there would take the round lock from the merges, so
        blocks are regrouped after arrivals instead (``regroup_after``), as for any kind."""
        return spec.mode == "async" and capabilities.forms_leases(task) and self.ctx.bus is None

    async def build(self, spec: TaskSpec, head: Head) -> BuiltTask:
        """The task built in this process and loaded at ``head``."""
        m = self.memory(spec.id)
        if m.built is not None and m.built.snapshot.version == head.version:
            return m.built
        # (an API process of the split mode learns of each commit from the store, and every long poll it
        # wakes asks together)
        async with m.load_lock:
            if m.built is None:
                settings = EngineSettings(
                    merge_policy=spec.merge_policy, screen_exact_checks=self.ctx.settings.screen_exact_checks
                )

                def make() -> BuiltTask:
                    task = create_task(spec.kind, spec.params)
                    capabilities.warm_up(task)  # a replica's first scoring of this kind pays for nothing
                    return BuiltTask(task, RoundEngine(task, settings), snapshot_of(task, head))

                m.built = await asyncio.to_thread(make)
            elif m.built.snapshot.version != head.version:
                m.built.snapshot = await asyncio.to_thread(snapshot_of, m.built.task, head)
            return m.built

    async def bandit(self, spec: TaskSpec) -> adaptive.Bandit | None:
        """The task's adaptive selection (None: lease order), brought up to date with its stored rounds."""
        m = self.memory(spec.id)
        if m.bandit is None:
            bandit = adaptive.bandit_of(spec.selection, spec.neighbourhoods)
            if bandit is None or spec.mode != "rounds":
                return None
            m.bandit = bandit
        entries = await self.ctx.store.rounds(spec.id, since=m.bandit.rounds)
        return m.bandit.replay(spec.initial_objective, [e.record for e in entries])

    async def known_rounds(self, task_id: str) -> list[RoundEntry]:
        """The task's stored rounds, read once per process: each call reads only the ones added since."""
        known = self.memory(task_id).rounds
        since = len(known)
        fresh = await self.ctx.store.rounds(task_id, since=since)
        known.extend(fresh[len(known) - since :])  # (another call may have added some meanwhile)
        return known

    def agent(self, task_id: str, digest: str) -> AgentRecord | None:
        m = self._tasks.get(task_id)
        return None if m is None else m.agents.get(digest)

    def remember_agent(self, task_id: str, digest: str, agent: AgentRecord) -> None:
        """Agent records never change and are never revoked, so a verified one is kept: that saves a store
        lookup (a Redis round trip) on every agent request. Only successes are kept."""
        if self._agents >= self.AGENT_CACHE:
            for m in self._tasks.values():
                m.agents.clear()
            self._agents = 0
        self.memory(task_id).agents[digest] = agent
        self._agents += 1

    def forget(self, task_id: str) -> None:
        """Drop what this process holds of a task that no longer exists, and wake its waiters."""
        m = self._tasks.pop(task_id, None)
        if m is not None:
            self._agents -= len(m.agents)
        self.events.notify(task_id)

    def sizes(self) -> dict[str, int]:
        """What this process holds (the soak benchmark watches these stay bounded)."""
        held = list(self._tasks.values())
        return {
            "tasks": len(held),
            "specs": sum(m.spec is not None for m in held),
            "preparing": sum(m.preparation is not None for m in held),
            "built": sum(m.built is not None for m in held),
            "bandits": sum(m.bandit is not None for m in held),
            "rounds": sum(len(m.rounds) > 0 for m in held),
            "agents": self._agents,
            "events": self.events.waiting(),
        }
