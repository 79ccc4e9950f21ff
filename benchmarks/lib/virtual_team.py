"""Virtual-core replay of an async team: N agent cores and one coordinator core in one process.

Why: a 2-core machine shared by others cannot run 12 agent processes, but it can run the same code one call
at a time and book each call's CPU time on the core that would have run it. The model (a discrete-event
simulation):

- Agent i is a core with its own clock. It runs the worker's loop (``agents/worker.py``): lease, propose,
  submit (the verdict brings the next lease), or abandon when the proposer finds nothing (a proposer whose
  ``retry_pause`` is 0 gets its next lease in the same request; another waits it out and leases);
  ``no_block_available`` waits ``retry_after``. Each proposer call runs for
  real (the kind's own proposer, ``agents.proposers.make_proposer``, seeded as ``agents/fleet.py`` seeds
  worker i); its thread CPU time advances agent i's clock. Its time budget follows that CPU time too:
  ``time.perf_counter`` reads ``time.thread_time`` during a replay, so a 0.5 s budget buys what 0.5 s of a
  dedicated core buys.
- The coordinator is one core, a single FIFO server: the real ``CoordinatorService`` over a ``MemoryStore``,
  its lease/submit/release/tick methods called directly (no HTTP). A request that reaches it at time a
  starts at max(a, coordinator free) (``ServerCore``); its process CPU time (scoring, merge, regroup, the
  store, the JSON a real request would encode and decode) advances the coordinator's clock. The service's
  ``clock`` is the virtual clock, which moves with the CPU the call has used so far. The scheduler's tick
  is a coordinator request every ``settings.tick`` s after the last one ended, as its loop sleeps.
- Events (a request reaching the coordinator) are handled in virtual-time order (``EventQueue`` refuses to
  go back in time): a lease sees the head as of its virtual time, and an answer is scored on the head of
  its arrival. A proposer call runs when its lease is handed out, in a thread of its own (``AgentCall``);
  its answer is queued at (lease end + its CPU time). A search that asks its feed what merged meanwhile
  (``GET .../changes``, ``LockstepFeed``) stops there until the replay has handled every earlier event:
  the ask, at (lease end + the CPU used so far), takes the reply that has arrived by then (if any) and
  sends the next request, served on the coordinator's core from that moment. The search does not wait for
  it, as the worker's background request does not hold it up. The replay and a call never run at once.
- A served model (``--proposer simulated-llm``: the heuristic with GPT-OSS-120B's serving latency,
  ``agents/llm/simulated.py``) is not slept for: a call takes max(its CPU, the model's latency) of its
  agent's clock, as the worker's call takes max(the heuristic's wall time, the latency) when it sleeps.
  The GPU is not a core of the model: its streams' slowdown is the latency model's (``concurrent_streams``).
- Task creation (the kind's first plan) is coordinator work from time 0, as ``created_at`` is the request's
  arrival. Agent i joins at (creation end + worker start-up), start-up being the measured CPU of a worker
  process's imports plus its own ``create_task`` and proposer.
- The garbage collector runs as it runs in each process of a team: every one of them settles its heap at
  start (``coordinator/runtime/heap.py``: a young generation of 20,000 allocations, not Python's 700), and
  so does the replay's one process. With Python's default a 16-agent replay spent 21 % of its CPU in full
  collections (each call that set one off booked a scan of every object of all 17 parties'); a full
  collection's cost follows the objects promoted to the old generation, so one process stands for many.
- A call longer than a third of the lease's TTL renews it every third, as the worker's renewer thread does
  (a coordinator request each; only LLM calls last that long).

Not modelled: HTTP framing and loopback latency (uvicorn, httpx: only the JSON bodies are encoded and
decoded), the worker's HTTP client's CPU, the GIL and thread hops inside the coordinator process (its
CPU is counted, not its contention). The real service scores an arrival in a worker thread while its event
loop serves leases, all under one GIL: one core's capacity shared by its requests, where the model serves
them one after another (same capacity, another order). Nor memory
bandwidth and caches shared by cores, CPU frequency changes, the OS scheduler; a core is never shared.
A worker process loads numba's cached SIPP code on its first search; the model's agents share one load.
Python-level CPU of a call measured on a busy machine is close to, not equal to, what a dedicated core
spends (the cache misses of a shared core count in).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from agents.llm.simulated import SimulatedLLMProposer
from agents.proposers import make_proposer
from blockopt.budgets import run_budgets
from coordinator import errors
from coordinator.engine.records import Usage
from coordinator.runtime import heap
from coordinator.runtime.datapaths import dirs_for
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask, JoinRequest, ProposalIn
from coordinator.runtime.wire_json import dump_json
from coordinator.settings import ServiceSettings
from coordinator.store.base import TERMINAL, AbandonedLease, AgentRecord
from coordinator.store.memory import MemoryStore
from tasks import capabilities
from tasks.base import Draft, Proposer
from tasks.registry import create_task, kind_class

END_CODES = {"task_finished", "budget_exceeded"}


class OutOfOrder(RuntimeError):
    """A simulator invariant broke: an event earlier than one already handled, or two coordinator calls
    at once. Raised, never repaired: a replay that broke it measures nothing."""


@dataclass(order=True)
class Event:
    at: float
    seq: int
    kind: str = field(compare=False)
    agent: int = field(compare=False, default=-1)
    payload: Any = field(compare=False, default=None)


class EventQueue:
    """Events by virtual time (ties: the order they were queued). Handling one earlier than the last handled,
    or queuing one in the past, raises ``OutOfOrder``."""

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._seq = 0
        self.now = 0.0
        self.handled: list[float] = []

    def push(self, at: float, kind: str, agent: int = -1, payload: Any = None) -> None:
        if at < self.now:
            raise OutOfOrder(f"event {kind} queued at {at:.6f} s, before now ({self.now:.6f} s)")
        heapq.heappush(self._heap, Event(at, self._seq, kind, agent, payload))
        self._seq += 1

    def pop(self) -> Event:
        event = heapq.heappop(self._heap)
        self.accept(event)
        return event

    def accept(self, event: Event) -> None:
        """Move the clock to an event about to be handled (``pop`` does; a test feeds one directly)."""
        if event.at < self.now:
            raise OutOfOrder(f"event {event.kind} at {event.at:.6f} s handled after {self.now:.6f} s")
        self.now = event.at
        self.handled.append(event.at)

    def peek(self) -> float | None:
        return self._heap[0].at if self._heap else None

    def waiting(self, kind: str) -> list[Any]:
        """The payloads of the events of ``kind`` not handled yet."""
        return [e.payload for e in self._heap if e.kind == kind]

    def __len__(self) -> int:
        return len(self._heap)


class ServerCore:
    """The coordinator's one core: FIFO, one call at a time. ``start`` then ``finish`` per call."""

    def __init__(self) -> None:
        self.free_at = 0.0
        self.busy = 0.0
        self.calls: list[tuple[float, float, float, str]] = []
        """(arrival, start, end, what) per call, in the order served."""
        self._open: tuple[float, float] | None = None

    def start(self, arrival: float) -> float:
        if self._open is not None:
            raise OutOfOrder(f"a coordinator call starts while the one from {self._open[1]:.6f} s runs")
        begin = max(arrival, self.free_at)
        self._open = (arrival, begin)
        return begin

    def finish(self, cpu: float, what: str) -> float:
        if self._open is None:
            raise OutOfOrder("a coordinator call finishes that never started")
        (arrival, begin), self._open = self._open, None
        end = begin + max(0.0, cpu)
        before = self.calls[-1] if self.calls else (float("-inf"), 0.0, 0.0, "")
        check_calls([(arrival, begin, end, what)], free=before[2], last_arrival=before[0])
        self.calls.append((arrival, begin, end, what))
        self.free_at = end
        self.busy += end - begin
        return end


def check_calls(
    calls: list[tuple[float, float, float, str]], free: float = 0.0, last_arrival: float = float("-inf")
) -> None:
    """The coordinator core's invariants: calls served in arrival order, none before it arrived, none
    before the previous one ended (one call at a time), each starting as soon as both allow."""
    for arrival, begin, end, what in calls:
        if arrival < last_arrival:
            raise OutOfOrder(f"{what} arrived at {arrival:.6f} s, served after one that arrived later")
        if begin < free - 1e-12 or begin < arrival - 1e-12:
            raise OutOfOrder(f"{what} starts at {begin:.6f} s, before the core was free or it arrived")
        if end < begin:
            raise OutOfOrder(f"{what} ends before it starts")
        if begin > max(arrival, free) + 1e-12:
            raise OutOfOrder(f"{what} waited at {begin:.6f} s with the core free")
        free, last_arrival = end, arrival


def check_order(handled: list[float]) -> None:
    """Events were handled in virtual-time order."""
    for a, b in zip(handled, handled[1:], strict=False):
        if b < a:
            raise OutOfOrder(f"an event at {b:.6f} s was handled after one at {a:.6f} s")


class VirtualClock:
    """The service's clock: the start of the running call plus the CPU it has used so far."""

    def __init__(self) -> None:
        self.base = 0.0
        self._cpu0: float | None = None

    def __call__(self) -> float:
        if self._cpu0 is None:
            return self.base
        return self.base + (time.process_time() - self._cpu0)

    @contextlib.contextmanager
    def running(self, at: float) -> Iterator[None]:
        self.base, self._cpu0 = at, time.process_time()
        try:
            yield
        finally:
            self.base, self._cpu0 = self(), None


@contextlib.contextmanager
def cpu_deadlines() -> Iterator[None]:
    """``time.perf_counter`` reads this thread's CPU time: the code's wall-time budgets become CPU budgets,
    what they are on a dedicated core."""
    wall = time.perf_counter
    time.perf_counter = time.thread_time
    try:
        yield
    finally:
        time.perf_counter = wall


@dataclass
class Agent:
    index: int
    record: AgentRecord
    proposer: Proposer
    cpu: float = 0.0
    calls: int = 0
    wasted: float = 0.0
    """CPU of proposer calls that found nothing (the lease was abandoned)."""
    served: float = 0.0
    """Seconds its calls waited on a served model beyond their own CPU (0 for the heuristic)."""
    tokens: list[tuple[float, int]] = field(default_factory=list)
    """(virtual time the call ended, its prompt + completion tokens), for a proposer that counts tokens."""
    done: bool = False


class ReplayOver(BaseException):
    """Raised inside a call that is still asking its feed when the replay ends: the call stops there."""


QUIET = "quiet"
"""What the replay hands a feed whose request was refused: it asks no more in this call."""


class LockstepFeed:
    """The ``HeadFeed`` of a replayed call: an ask hands control back to the replay, which handles every
    earlier event first, then gives it the reply that has arrived by the ask's virtual time
    (``Replay._on_feed``)."""

    def __init__(self, version: int, to_replay: queue.Queue[float | None], started: float) -> None:
        self.version = version
        self._to_replay, self._started = to_replay, started
        self._reply: queue.Queue[Any] = queue.Queue()  # a reply's text, None (nothing yet), QUIET, ReplayOver
        self.quiet = False

    def __call__(self) -> Any | None:
        if self.quiet:
            return None
        self._to_replay.put(time.thread_time() - self._started)  # the ask's time: the call's CPU so far
        text = self._reply.get()
        if text is ReplayOver:
            raise ReplayOver()
        if text is QUIET:
            self.quiet = True
            return None
        if text is None:
            return None
        view = json.loads(text)  # (what the worker decodes: the agent's CPU)
        self.version = int(view["version"])
        return view.get("changes")

    def reply(self, text: str | None) -> None:
        self._reply.put(text)

    def stop(self) -> None:
        self._reply.put(ReplayOver)


class AgentCall:
    """One proposer call in a thread of its own, run in lockstep with the replay: ``run`` returns when the
    call asks its feed (the CPU it had used by then) or ends (None; ``draft`` and ``cpu`` are set). Only one
    of the replay and the call runs at any time; the call's CPU is its thread's."""

    def __init__(self, agent: Agent, grant_json: str, ready: float) -> None:
        self.agent, self.grant_json, self.ready = agent, grant_json, ready
        self.pending: tuple[float, str | None] | None = None
        """The feed's request in flight: (when its reply arrives, the reply's text, or None: refused)."""
        self.lease: dict[str, Any] = {}
        self.draft: Draft | None = None
        self.cpu = 0.0
        self._to_replay: queue.Queue[float | None] = queue.Queue()
        self._failed: BaseException | None = None
        self.feed = LockstepFeed(0, self._to_replay, 0.0)
        self._thread: threading.Thread | None = None

    def _body(self) -> None:
        t0 = time.thread_time()
        try:
            self.lease = json.loads(self.grant_json)
            self.feed = LockstepFeed(int(self.lease["version"]), self._to_replay, t0)
            self.agent.proposer.feed = self.feed
            self.draft = self.agent.proposer.propose(self.lease["contract"])
        except ReplayOver:
            pass
        except BaseException as exc:  # handed to the replay, which raises it
            self._failed = exc
        finally:
            self.agent.proposer.feed = None
            self.cpu = time.thread_time() - t0
            self._to_replay.put(None)

    def stop(self) -> None:
        """End a call that waits on its feed (the replay is over): it stops at its ask."""
        self.feed.stop()
        if self._thread is not None:
            self._thread.join()

    def run(self) -> float | None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._body, daemon=True, name="replayed-call")
            self._thread.start()
        asked = self._to_replay.get()
        if asked is None:
            self._thread.join()
            if self._failed is not None:
                raise self._failed
        return asked


@dataclass
class ReplayConfig:
    kind: str
    params: dict[str, Any]
    agents: int
    seconds: float
    seed: int
    knobs: dict[str, Any] = field(default_factory=dict)
    agent_start: float | None = None
    """Seconds a worker process needs before it joins; None: measured (``worker_startup_cpu``)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """``ServiceSettings`` overrides (the defaults are ``blockopt run``'s)."""
    proposer: str = "heuristic"
    """The agents' proposer: ``heuristic``, or ``simulated-llm`` (its latency on the agent's clock)."""
    proposer_options: dict[str, str] = field(default_factory=dict)
    """The proposer's options, as ``blockopt run --proposer-option`` gives them."""
    stop_at: float | None = None
    """End the replay once the head's objective is at or below this (status ``target_reached``): a
    comparison against a known value needs no more, since the head never rises."""


@dataclass
class ReplayResult:
    curve: list[tuple[float, float]]
    """(seconds since creation, objective) at every window close, as the report's history gives it."""
    commits: list[tuple[float, float]]
    """(seconds since creation, objective) after every accepted answer."""
    verdicts: dict[str, int]
    abandoned: int
    proposals: int
    accepted: int
    coordinator_cpu: float
    """Coordinator CPU after creation (creation, the first plan, excluded)."""
    create_cpu: float
    agent_cpu: list[float]
    agent_wasted: list[float]
    """Per agent, the CPU of its calls that found nothing (abandoned leases)."""
    agent_served: list[float]
    """Per agent, the seconds its calls waited on a served model beyond their CPU."""
    tokens: list[tuple[float, int]]
    """(virtual seconds since creation, tokens spent by then) after every call that counted tokens."""
    agent_start: float
    status: str
    solution: dict[str, Any]
    """The kind's ``solution`` of the head at the end (routing: the paths), for an independent check."""
    calls: list[tuple[float, float, float, str]]
    handled: list[float]
    seconds: float

    def summary(self) -> dict[str, Any]:
        run = max(1e-9, self.seconds - self.create_cpu)
        return {
            "busy_fraction": self.coordinator_cpu / run,
            "cpu_per_commit_ms": 1000 * self.coordinator_cpu / self.accepted if self.accepted else None,
            "cpu_per_proposal_ms": 1000 * self.coordinator_cpu / self.proposals if self.proposals else None,
        }


def worker_startup_cpu() -> float:
    """CPU seconds of a fresh worker process's imports and its kind's warm-up from numba's on-disk cache (what
    ``blockopt`` spawns per agent; in this one process the kernels are loaded once, by the first agent)."""
    code = (
        "import agents.worker, agents.proposers, tasks.registry, tasks.routing.lns, tasks.routing.plan_jit;"
        " tasks.routing.sipp_jit.warm(); tasks.routing.plan_jit.warm_counts()"
    )
    before = _children_cpu()
    subprocess.run([sys.executable, "-c", code], check=True)
    return _children_cpu() - before


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Replay:
    """One replay of one task with ``config.agents`` virtual agent cores (see the module docstring)."""

    def __init__(self, config: ReplayConfig) -> None:
        self.config = config
        self.clock = VirtualClock()
        cls = kind_class(config.kind)
        self.knobs = cls.ProposerParams.model_validate(config.knobs).model_dump()
        self.settings = ServiceSettings(data_dirs=dirs_for(cls.Params, config.params), **config.settings)
        self.service = CoordinatorService(
            self.settings, MemoryStore(), ServiceMetrics(CollectorRegistry()), clock=self.clock
        )
        self.queue = EventQueue()
        self.core = ServerCore()
        self.agents: list[Agent] = []
        self.task_id = ""
        self.created_at = 0.0
        self.verdicts: dict[str, int] = {}
        self.abandoned = 0
        self.commits: list[tuple[float, float]] = []
        self.status = "running"
        self.ended_at: float | None = None
        """Virtual seconds since creation when the run reached ``stop_at``."""

    # -- the coordinator core ----------------------------------------------------
    async def serve(self, arrival: float, what: str, call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
        """Run one coordinator call on its core: (end time, result or the BlockoptError it raised)."""
        begin = self.core.start(arrival)
        cpu0 = time.process_time()
        result: Any
        with self.clock.running(begin):
            try:
                result = await call()
            except errors.BlockoptError as exc:
                result = exc
            await self._drain()
        return self.core.finish(time.process_time() - cpu0, what), result

    async def _drain(self) -> None:
        """Let the work a call spawned (``_spawn``: a release's round check) run inside that call."""
        for _ in range(100):
            pending = [t for t in self.service.background.jobs if not t.done()]
            if not pending:
                return
            await asyncio.gather(*pending, return_exceptions=True)

    # -- one agent's loop ----------------------------------------------------------
    def _propose(self, agent: Agent, grant_json: str, ready: float) -> None:
        """Agent ``agent`` got a lease at ``ready``: run its proposer for real (``AgentCall``), queue its
        answer, or its first ask for what merged meanwhile."""
        self._resume(AgentCall(agent, grant_json, ready))

    def _resume(self, call: AgentCall) -> None:
        """Let ``call`` run until it asks for the head's changes (queued at its virtual time) or ends."""
        asked = call.run()
        if asked is not None:
            self.queue.push(call.ready + asked, "feed", call.agent.index, call)
            return
        agent, ready, lease, draft, cpu = call.agent, call.ready, call.lease, call.draft, call.cpu
        took = max(cpu, self._latency(agent, cpu, ready))
        body: str | None = None
        if draft is not None:
            usage = dict(draft.info.get("usage") or {"calls": 1, "model": "heuristic"}) | {"seconds": took}
            body = json.dumps(
                {
                    "id": uuid.uuid4().hex,
                    "lease_id": lease["lease_id"],
                    "block": draft.block,
                    "base_version": call.feed.version,
                    "value": draft.value,
                    "predicted_improvement": draft.predicted_improvement,
                    "usage": usage,
                    "exact_minimizer": bool(draft.info.get("exact_minimizer", False)),
                }
            )
        agent.cpu += cpu
        agent.calls += 1
        renew_every = float(lease["ttl"]) / 3  # as the worker's renewer thread does while its proposer runs
        for i in range(1, int(took / renew_every) + 1):
            self.queue.push(ready + i * renew_every, "renew", agent.index, lease["lease_id"])
        if body is None:
            agent.wasted += cpu
            self.queue.push(ready + took, "abandon", agent.index, (lease, took))
        else:
            self.queue.push(ready + took, "submit", agent.index, body)

    async def _on_feed(self, agent: Agent, at: float, call: AgentCall) -> None:
        """A search asks its feed (``agents/feed.py``): it takes the reply that has arrived by now, if any,
        and the next request goes out, served on the coordinator's core from this moment (one in flight at a
        time). The search does not wait for it, as the worker's background request does not hold it up."""
        delivered: str | None = None
        if call.pending is not None and call.pending[0] <= at:
            delivered, call.pending = call.pending[1], None
            if delivered is None:  # the request was refused: quiet from now on
                call.feed.reply(QUIET)
                self._resume(call)
                return
        if call.pending is None:
            since = call.feed.version if delivered is None else int(json.loads(delivered)["version"])

            async def ask() -> str:
                return dump_json(await self.service.changes(self.task_id, agent.record, since))

            end, result = await self.serve(at, "changes", ask)
            call.pending = (end, None if isinstance(result, errors.BlockoptError) else result)
        call.feed.reply(delivered)
        self._resume(call)

    @staticmethod
    def _latency(agent: Agent, cpu: float, ready: float) -> float:
        """The served model's latency of the call that just ran on ``cpu`` from ``ready`` (0 for a proposer
        without one); its tokens are booked when the call ends."""
        if not isinstance(agent.proposer, SimulatedLLMProposer):
            return 0.0
        usage = agent.proposer.last_usage
        agent.tokens.append((ready + max(cpu, usage.seconds), usage.tokens))
        agent.served += max(0.0, usage.seconds - cpu)
        return usage.seconds

    def _end(self, agent: Agent, exc: errors.BlockoptError) -> bool:
        """After a refusal: True when the agent goes on (it waits and leases again), False when it ends."""
        if exc.code in END_CODES:
            agent.done = True
            return False
        return True

    async def _on_lease(self, agent: Agent, at: float) -> None:
        end, result = await self.serve(at, "lease", lambda: self._grant_json(agent))
        if isinstance(result, errors.BlockoptError):
            if self._end(agent, result):
                self.queue.push(end + float(result.context.get("retry_after") or 0.2), "lease", agent.index)
            return
        self._propose(agent, result, end)

    async def _grant_json(self, agent: Agent) -> str:
        grant = await self.service.lease(self.task_id, agent.record, agent.proposer.contract_kept)
        return dump_json(grant)

    async def _on_submit(self, agent: Agent, at: float, body: str) -> None:
        async def call() -> tuple[str, dict[str, Any]]:
            proposal = ProposalIn.model_validate_json(body)
            view, _ = await self.service.submit(
                self.task_id, agent.record, proposal, 0.0, next_lease=True, since=agent.proposer.contract_kept
            )
            out = dump_json(view)
            verdict = view.verdict
            head = None
            if verdict is not None and verdict.status == "accepted":
                head = (await self.service.store.get_head(self.task_id)).objective
            return out, {"code": verdict.code if verdict else "pending", "head": head}

        end, result = await self.serve(at, "submit", call)
        if isinstance(result, errors.BlockoptError):
            if self._end(agent, result):  # a dropped proposal (409/422): lease again, as the worker does
                self.verdicts[result.code] = self.verdicts.get(result.code, 0) + 1
                self.queue.push(end, "lease", agent.index)
            return
        out, info = result
        self.verdicts[info["code"]] = self.verdicts.get(info["code"], 0) + 1
        if info["head"] is not None:
            self.commits.append((end - self.created_at, info["head"]))
            if self.config.stop_at is not None and info["head"] <= self.config.stop_at:
                self.status = "target_reached"
                self.ended_at = end - self.created_at
        view = json.loads(out)
        if view.get("next_lease"):
            self._propose(agent, json.dumps(view["next_lease"]), end)
        else:
            self.queue.push(end, "lease", agent.index)

    async def _on_abandon(self, agent: Agent, at: float, lease: dict[str, Any], took: float) -> None:
        again = agent.proposer.retry_pause <= 0  # the worker asks for its next lease in the same request

        async def call() -> str | None:  # what POST .../abandon does (coordinator/api/routes/trajectories.py)
            spent = getattr(agent.proposer, "last_usage", None)  # tokens of a call that found nothing
            usage = Usage() if spent is None else Usage.model_validate(spent.as_dict() | {"seconds": took})
            record = AbandonedLease(
                id=uuid.uuid4().hex,
                agent=agent.record.id,
                block=lease["block"],
                base_version=lease["version"],
                outcome="declined",
                usage=usage,
                at=self.clock(),
            )
            await self.service.abandon(self.task_id, agent.record, lease["lease_id"], record)
            since = agent.proposer.contract_kept
            grant = await self.service.next_lease(self.task_id, agent.record, since) if again else None
            return None if grant is None else dump_json(grant)

        end, result = await self.serve(at, "abandon", call)
        self.abandoned += 1
        if isinstance(result, errors.BlockoptError) and not self._end(agent, result):
            return
        if isinstance(result, str):
            self._propose(agent, result, end)
        else:
            self.queue.push(end + agent.proposer.retry_pause, "lease", agent.index)

    async def _on_renew(self, agent: Agent, at: float, lease_id: str) -> None:
        await self.serve(at, "renew", lambda: self.service.renew(self.task_id, agent.record, lease_id))

    async def _on_tick(self, at: float) -> None:
        end, _ = await self.serve(at, "tick", self.service.tick)
        runtime = await self.service.store.get_runtime(self.task_id)
        if runtime.status in TERMINAL:
            self.status = str(runtime.status)
            return
        self.queue.push(end + self.settings.tick, "tick")

    # -- the replay --------------------------------------------------------------
    async def _create(self) -> tuple[str, str]:
        c = self.config
        request = CreateTask.model_validate(
            {
                "kind": c.kind,
                "params": c.params,
                "merge_policy": "checked",
                "mode": "async",
                "budgets": run_budgets(None, c.seconds),  # as `blockopt run --time-limit` asks
                "proposer": {"name": c.proposer, "knobs": self.knobs},
                "stop": {"stall_seconds": c.seconds},
            }
        )
        _, result = await self.serve(0.0, "create", lambda: self.service.create(request))
        if isinstance(result, errors.BlockoptError):
            raise RuntimeError(f"the coordinator refused the task: {result.message}")
        spec, join_token, _read = result
        self.created_at = spec.created_at
        return spec.id, join_token

    async def _join(self, index: int, join_token: str) -> Agent:
        c = self.config
        joined = await self.service.join(
            self.task_id, join_token, JoinRequest(name=f"agent-{index}", proposer=c.proposer)
        )
        record = await self.service.authenticate(self.task_id, f"Bearer {joined.token}")
        task = create_task(joined.task["kind"], joined.task["params"])
        proposer = make_proposer(c.proposer, task, self.knobs, c.seed * 1000 + index, c.proposer_options)
        capabilities.warm_up(task)  # as the worker does before its first lease
        if isinstance(proposer, SimulatedLLMProposer):
            proposer.sleep = False  # its latency goes on the agent's virtual clock (``_latency``)
        return Agent(index, record, proposer)

    async def run(self) -> ReplayResult:
        c = self.config
        start_up = worker_startup_cpu() if c.agent_start is None else c.agent_start
        heap.settle()  # what the coordinator's and every agent's process do once started
        with cpu_deadlines():
            self.task_id, join_token = await self._create()
            create_end = self.core.free_at
            for i in range(c.agents):
                t0 = time.thread_time()
                agent = await self._join(i, join_token)  # (its own task and proposer: agent CPU)
                self.agents.append(agent)
                self.queue.push(create_end + start_up + time.thread_time() - t0, "lease", i)
            self.queue.push(create_end + self.settings.tick, "tick")
            horizon = self.created_at + c.seconds
            try:
                await self._events(horizon)
            finally:
                for call in self.queue.waiting("feed"):  # calls stopped at an ask: they end there
                    call.stop()
        return await self._result(start_up)

    async def _events(self, horizon: float) -> None:
        """Handle the events in virtual-time order until the horizon, the target or the task's end."""
        while self.queue and self.status == "running":
            nxt = self.queue.peek()
            if nxt is None or nxt >= horizon:
                break
            event = self.queue.pop()
            if event.kind == "tick":
                await self._on_tick(event.at)
                continue
            agent = self.agents[event.agent]
            if agent.done:
                if event.kind == "feed":
                    event.payload.stop()
                continue
            if event.kind == "lease":
                await self._on_lease(agent, event.at)
            elif event.kind == "submit":
                await self._on_submit(agent, event.at, event.payload)
            elif event.kind == "abandon":
                await self._on_abandon(agent, event.at, *event.payload)
            elif event.kind == "renew":
                await self._on_renew(agent, event.at, event.payload)
            elif event.kind == "feed":
                await self._on_feed(agent, event.at, event.payload)
            else:
                raise OutOfOrder(f"unknown event {event.kind}")

    async def _result(self, start_up: float) -> ReplayResult:
        report = await self.service.report(self.task_id)
        rounds = await self.service.store.rounds(self.task_id)
        spec = await self.service.spec(self.task_id)
        curve = [(0.0, spec.initial_objective)]
        for e in rounds:  # where the head's objective changed (level merges move it at the same objective)
            if e.record.objective != curve[-1][1]:
                curve.append((e.closed_at - self.created_at, e.record.objective))
        check_order(self.queue.handled)
        check_calls(self.core.calls)
        create = self.core.calls[0][1:3]
        return ReplayResult(
            curve=curve,
            commits=self.commits,
            verdicts=dict(report.proposals.get("rejected_by_reason", {}))
            | {"accepted": int(report.proposals.get("accepted", 0))},
            abandoned=self.abandoned,
            proposals=int(report.proposals.get("received", 0)),
            accepted=int(report.proposals.get("accepted", 0)),
            coordinator_cpu=self.core.busy - (create[1] - create[0]),
            create_cpu=create[1] - create[0],
            agent_cpu=[a.cpu for a in self.agents],
            agent_wasted=[a.wasted for a in self.agents],
            agent_served=[a.served for a in self.agents],
            tokens=spent_by_time(self.agents, self.created_at),
            agent_start=start_up,
            status=self.status,
            solution=(await self.service.solution(self.task_id))["solution"],
            calls=self.core.calls,
            handled=self.queue.handled,
            seconds=self.config.seconds if self.ended_at is None else self.ended_at,
        )


def spent_by_time(agents: list[Agent], created_at: float) -> list[tuple[float, int]]:
    """Every token-counting call of the team in time order: (seconds since creation, tokens spent by then)."""
    calls = sorted((at - created_at, n) for a in agents for at, n in a.tokens)
    total, out = 0, []
    for t, n in calls:
        total += n
        out.append((t, total))
    return out


def replay(config: ReplayConfig) -> ReplayResult:
    return asyncio.run(Replay(config).run())
