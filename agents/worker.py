"""One agent worker: join → (lease → contract → propose → submit → verdict)* over HTTP.

Each request that leases says ``since`` when the proposer keeps its last contract (``contract_kept``): the
coordinator may then write the next one as changes against it.

Talks to the coordinator only through its HTTP API (never imports
``coordinator``). Handling by the coordinator's error codes: 409 drops the
lease and leases again; 429 waits (Retry-After) unless a budget is spent;
task_finished and budget_exceeded end the worker. A stop request (SIGTERM /
SIGINT via ``stop``) finishes the current call, releases the lease and exits.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agents.feed import HttpHeadFeed
from agents.http import Api, ApiError, GaveUp
from agents.proposers import make_proposer
from agents.renewer import LeaseRenewer
from tasks import capabilities
from tasks.base import Proposer
from tasks.registry import create_task

log = logging.getLogger("blockopt.agent")
END_CODES = {"task_finished", "budget_exceeded"}
PREPARING = "task_preparing"
"""The task's kind is still preparing it (reference, first plan): wait ``retry_after`` and try again."""


class Shutdown(BaseException):
    """Raised by a signal handler to abandon a slow proposer call (its result is discarded anyway)."""


@dataclass(frozen=True)
class WorkerConfig:
    coordinator: str
    task: str
    join_token: str
    proposer: str = "heuristic"
    proposer_options: dict[str, str] = field(default_factory=dict)
    name: str = "agent"
    seed: int = 0
    poll_wait: float = 2.0
    """Long-poll seconds per verdict request (also bounds how long a stop can take)."""
    max_retries: int = 8
    timeout: float = 30.0
    reconnect_patience: float = 120.0
    """Once joined, seconds to keep retrying a coordinator that refuses connections (a restart, an
    upgrade); before joining, ``max_retries`` alone decides (a wrong URL fails fast)."""


@dataclass
class WorkerStats:
    leases: int = 0
    proposals: int = 0
    accepted: int = 0
    rejected: int = 0
    dropped: int = 0
    abandoned: int = 0
    """Leases ended without a proposal whose cost was reported (``POST .../abandon``)."""
    waits: int = 0
    written_since: int = 0
    """Leases whose contract came written against the one the proposer kept (``since``): only what changed."""
    verdicts: dict[str, int] = field(default_factory=dict)
    ended: str = ""


class Worker:
    def __init__(self, config: WorkerConfig, stop: threading.Event | None = None) -> None:
        self.config = config
        self.stop = stop or threading.Event()
        self.api = Api(
            config.coordinator,
            timeout=config.timeout,
            max_retries=config.max_retries,
            stop=self.stop,
            seed=config.seed,
        )
        self.stats = WorkerStats()
        self.agent_id = ""
        self.lease_id: str | None = None
        self.next_lease: dict[str, Any] | None = None
        """A lease that came with the last verdict (``?next_lease=true``): the next step skips ``POST /leases``."""
        self.proposer: Proposer | None = None
        self.model = model_label(config.proposer, config.proposer_options)
        """The model this agent's usage is booked under, also when a lease cost no model call."""
        self.interruptible = False
        """True while the proposer runs: a stop signal may then raise Shutdown (see ``interrupt``)."""
        self.feed_requests = ThreadPoolExecutor(max_workers=1, thread_name_prefix="head-feed")
        """The one thread that carries the proposer's head-feed requests (``agents/feed.py``)."""
        self._base = f"/v1/tasks/{config.task}"

    # -- protocol steps ---------------------------------------------------------
    def join(self) -> None:
        """Join the task; while the coordinator still prepares it (``task_preparing``), wait and try again."""
        while True:
            try:
                r = self.api.call(
                    "POST",
                    f"{self._base}/agents",
                    token=self.config.join_token,
                    json={
                        "name": self.config.name,
                        "proposer": self.config.proposer,
                        "model": self.model,
                    },
                )
                break
            except ApiError as exc:
                if exc.code != PREPARING:
                    raise
                if self.stop.is_set():
                    raise Shutdown() from None
                self._wait(exc.retry_after, default=1.0)
        joined = r.json()
        self.agent_id = joined["agent_id"]
        self.api.token = joined["token"]
        self.api.reconnect_patience = self.config.reconnect_patience
        info = joined["task"]
        task = create_task(info["kind"], info["params"])
        hints = info.get("proposer") or {}
        knobs = hints.get("knobs", {}) if hints.get("name", "heuristic") == self.config.proposer else {}
        self.proposer = make_proposer(
            self.config.proposer, task, knobs, self.config.seed, self.config.proposer_options
        )
        started = time.monotonic()
        capabilities.warm_up(task)  # before the first lease: no proposal's budget pays for loading
        log.info(
            "%s joined task %s as %s (%s, %d blocks; warmed up in %.2f s)",
            self.config.name,
            self.config.task,
            self.agent_id,
            info["kind"],
            info.get("blocks", -1),
            time.monotonic() - started,
        )

    def _wait(self, seconds: float | None, default: float = 0.2) -> None:
        self.stats.waits += 1
        self.stop.wait(max(0.01, seconds if seconds is not None else default))

    def release(self) -> None:
        if self.lease_id is None:
            return
        lease_id, self.lease_id = self.lease_id, None
        try:
            self.api.call("DELETE", f"{self._base}/leases/{lease_id}", retry=False)
        except (ApiError, GaveUp) as exc:
            log.info("%s: release failed (%s); the lease will expire", self.config.name, exc)

    def _usage(self, info: dict[str, Any], seconds: float) -> dict[str, Any]:
        usage = dict(info.get("usage") or {"calls": 1, "model": self.model})
        usage["seconds"] = max(float(usage.get("seconds") or 0.0), seconds)
        for size in ("prompt_chars", "response_chars"):  # sizes for the trajectory export
            if isinstance(info.get(size), int):
                usage[size] = info[size]
        return usage

    def abandon(self, lease: dict[str, Any], seconds: float) -> None:
        """End a lease that produced no proposal, reporting "nothing found" and what the search cost.

        The report is how a round of agents that all found nothing closes and
        counts as stalled (so the task converges, or regroups its blocks), and
        tokens spent on an answer that never validated are still spent: the
        coordinator counts them in the task's usage and budgets. A proposer that
        leases again at once (``retry_pause`` 0) gets its next lease in the
        same request, as a verdict brings it.
        """
        spent = getattr(self.proposer, "last_usage", None)
        outcome = getattr(self.proposer, "last_outcome", None)
        if spent is None or not (getattr(spent, "calls", 0) or getattr(spent, "tokens", 0)):
            usage: dict[str, Any] = {"calls": 1, "model": self.model, "seconds": seconds}
        else:
            usage = {**spent.as_dict(), "seconds": max(float(spent.seconds), seconds)}
        for size in ("prompt_chars", "response_chars"):
            if isinstance(getattr(outcome, size, None), int):
                usage[size] = getattr(outcome, size)
        failed = getattr(outcome, "status", None) == "failed"
        body = {
            "id": uuid.uuid4().hex,
            "block": lease["block"],
            "base_version": lease["version"],
            "outcome": "failed" if failed else "declined",
            "usage": usage,
            "failure": getattr(outcome, "failure", None) if failed else None,
            "reason": (getattr(outcome, "reason", None) or "")[:2000] or None if failed else None,
        }
        lease_id, self.lease_id = self.lease_id, None
        again = not self.stop.is_set() and self.proposer is not None and self.proposer.retry_pause <= 0
        try:
            r = self.api.call(
                "POST",
                f"{self._base}/leases/{lease_id}/abandon",
                json=body,
                params=self._lease_params({"next_lease": "true"}) if again else None,
                retry=not self.stop.is_set(),
            )
            self.stats.abandoned += 1
            grant = r.json().get("next_lease") if again else None
            if grant:  # held from now on: released on stop like any lease
                self.next_lease, self.lease_id = grant, grant["lease_id"]
        except (ApiError, GaveUp) as exc:
            log.warning("%s: abandoned lease not reported (%s); releasing it", self.config.name, exc)
            self.lease_id = lease_id
            self.release()

    def step(self) -> bool:
        """One lease → propose → submit → verdict cycle; False when the worker should end."""
        assert self.proposer is not None
        lease, self.next_lease = self.next_lease, None
        if lease is None:
            try:
                lease = self.api.call("POST", f"{self._base}/leases", params=self._lease_params({})).json()
            except ApiError as exc:
                return self._may_retry(exc)  # lease again on the next step, or stop: the task ended
        self.stats.leases += 1
        self.stats.written_since += "since" in lease["contract"]
        self.lease_id = lease["lease_id"]
        feed = self.proposer.feed = HttpHeadFeed(
            self.api, self._base, int(lease["version"]), self.feed_requests
        )
        t0 = time.perf_counter()
        with LeaseRenewer(self.api, f"{self._base}/leases/{lease['lease_id']}/renew", float(lease["ttl"])):
            self.interruptible = True
            try:
                if self.stop.is_set():  # a signal landed just before the flag was up
                    raise Shutdown()
                draft = self.proposer.propose(lease["contract"])
            finally:
                self.interruptible = False
        seconds = time.perf_counter() - t0
        if self.stop.is_set() or draft is None:
            if draft is None:
                self.abandon(lease, seconds)
            else:
                self.release()
            if draft is None and self.proposer.retry_pause > 0:
                self._wait(self.proposer.retry_pause)
            return not self.stop.is_set()
        body = {
            "id": uuid.uuid4().hex,
            "lease_id": lease["lease_id"],
            "block": draft.block,
            "base_version": feed.version,  # the head the search took in last (the lease's, if none)
            "value": draft.value,
            "predicted_improvement": draft.predicted_improvement,
            "usage": self._usage(draft.info, seconds),
            "exact_minimizer": bool(draft.info.get("exact_minimizer", False)),
        }
        verdict = self._submit(body)
        if verdict is not None:
            self.stats.verdicts[verdict["code"]] = self.stats.verdicts.get(verdict["code"], 0) + 1
            if verdict["status"] == "accepted":
                self.stats.accepted += 1
            else:
                self.stats.rejected += 1
        return self.stats.ended == ""

    def _lease_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` of a request that leases, with ``since`` when the proposer keeps its last contract: the
        next one may then be written against it (the kind's ``ContractDeltas``)."""
        kept = getattr(self.proposer, "contract_kept", None)
        return params if kept is None else {**params, "since": kept}

    def close(self) -> None:
        """Release the lease, wait for the feed's request in flight, close the HTTP client."""
        self.release()
        self.feed_requests.shutdown(wait=True)
        self.api.close()

    def _may_retry(self, exc: ApiError) -> bool:
        """After a refused call: False when the task has ended (recorded in the stats), True after waiting
        out a 429; any other refusal is raised again."""
        if exc.code in END_CODES:
            self.stats.ended = exc.code
            return False
        if exc.status == 429:
            self._wait(exc.retry_after)
            return True
        raise exc

    def _submit(self, body: dict[str, Any]) -> dict[str, Any] | None:
        for _ in range(100):
            try:
                r = self.api.call(
                    "POST",
                    f"{self._base}/proposals",
                    json=body,
                    params=self._lease_params({"wait": self.config.poll_wait, "next_lease": "true"}),
                )
                break
            except ApiError as exc:
                if exc.code not in END_CODES and exc.status in (403, 409, 422):
                    log.info("%s: proposal dropped: %s", self.config.name, exc)
                    self.stats.dropped += 1
                    self.lease_id = None
                    return None
                if not self._may_retry(exc):
                    self.lease_id = None
                    return None
                if self.stop.is_set():
                    self.release()
                    return None
                continue
        else:
            return None
        self.lease_id = None  # consumed by the stored proposal
        self.stats.proposals += 1
        log.debug("%s: proposal %s acknowledged", self.config.name, body["id"])
        view = r.json()
        while r.status_code == 202 and not self.stop.is_set():
            try:
                r = self.api.call(
                    "GET",
                    f"{self._base}/proposals/{view['id']}",
                    params=self._lease_params({"wait": self.config.poll_wait, "next_lease": "true"}),
                )
            except ApiError as exc:
                if not self._may_retry(exc):
                    return None
                continue
            view = r.json()
            if r.status_code == 202:
                status = self.api.call("GET", self._base).json()["status"]
                if status != "running":
                    self.stats.ended = "task_finished"
                    return None
        if view.get("next_lease"):  # held from now on: released on stop like any lease
            self.next_lease = view["next_lease"]
            self.lease_id = self.next_lease["lease_id"]
        return view.get("verdict")

    def run(self) -> WorkerStats:
        try:
            if not self.stop.is_set():
                self.join()
            while not self.stop.is_set() and self.step():
                pass
        except ApiError as exc:
            if exc.code not in END_CODES:
                log.error("%s: coordinator error: %s", self.config.name, exc)
                self.stats.ended = exc.code
            else:
                self.stats.ended = exc.code
        except GaveUp as exc:
            log.error("%s: giving up: %s", self.config.name, exc)
            self.stats.ended = "unreachable"
        except Shutdown:
            self.stats.ended = "stopped"
        except LookupError as exc:  # unknown proposer or task kind: say which, do not crash
            log.error("%s: %s", self.config.name, exc)
            self.stats.ended = "bad_config"
        finally:
            self.close()
        if not self.stats.ended:
            self.stats.ended = "stopped"
        log.info(
            "%s: %s after %d proposals (%d accepted; %d of %d contracts written since the last)",
            self.config.name,
            self.stats.ended,
            self.stats.proposals,
            self.stats.accepted,
            self.stats.written_since,
            self.stats.leases,
        )
        return self.stats


def model_label(proposer: str, options: dict[str, str]) -> str:
    """The model name an agent joins with (usage is aggregated per model): the LLM's, else the proposer's."""
    if proposer in ("llm", "simulated-llm"):
        from agents.llm.settings import DEFAULT_MODEL

        model = options.get("model") or DEFAULT_MODEL
        return f"simulated:{model}" if proposer == "simulated-llm" else model
    return proposer


def interrupt(worker: Worker) -> None:
    """Signal-handler body: ask the worker to stop; abandon the proposer if it is thinking right now."""
    worker.stop.set()
    if worker.interruptible:
        worker.interruptible = False
        raise Shutdown()
