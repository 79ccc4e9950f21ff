"""The worker's head feed: a search asks the real coordinator what merged, and answers on that head."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agents.feed import HttpHeadFeed
from agents.http import Api
from agents.proposers import register_proposer
from agents.worker import Worker, WorkerConfig
from tasks.base import Draft, Proposer
from tests.conftest import Coordinator
from tests.coordinator.api.test_head_changes import merge_an_answer, routing_task


class AsksWhileAnotherMerges(Proposer):
    """Lets another agent merge while it "searches", asks its feed, and answers nothing new."""

    def __init__(self, merge: Any) -> None:
        self.merge = merge
        self.told: list[Any] = []

    def propose(self, contract: Any) -> Draft | None:
        assert self.feed is not None
        assert _first_news(self.feed, seconds=0.3) is None  # asking, before anything merged
        self.merge()
        self.told.append(_first_news(self.feed))
        self.told.append(_first_news(self.feed, seconds=0.3))
        return Draft(int(contract["block"]), [None] * len(contract["data"]["robots"]), 0.0)


def _first_news(feed: Any, seconds: float = 10.0) -> Any:
    """Ask ``feed`` every 10 ms (it never waits on the coordinator) until it tells something, or None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        told = feed()
        if told is not None:
            return told
        time.sleep(0.01)
    return None


def test_the_answer_is_based_on_the_head_the_feed_told_of(
    coordinator: Coordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, _a, other = routing_task(coordinator)
    proposer = AsksWhileAnotherMerges(lambda: merge_an_answer(other, task["id"]))
    register_proposer("asks-while-another-merges")(lambda task, knobs, seed, options: proposer)
    name = "asks-while-another-merges"
    worker = Worker(WorkerConfig(coordinator.url, task["id"], task["join_token"], proposer=name))
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(worker, "_submit", lambda body: sent.append(body))
    leases: list[int] = []
    call = worker.api.call
    monkeypatch.setattr(
        worker.api,
        "call",
        lambda method, path, **kw: _seen(call(method, path, **kw), path, leases),
    )
    worker.join()
    worker.step()
    worker.close()
    first, second = proposer.told
    assert first is not None and first["paths"] and second is None  # told once, then nothing new
    assert leases and sent[0]["base_version"] > leases[0]


def _seen(r: Any, path: str, leases: list[int]) -> Any:
    if path.endswith("/leases"):
        leases.append(int(r.json()["version"]))
    return r


def test_a_feed_the_coordinator_refuses_goes_quiet(coordinator: Coordinator) -> None:
    """A refused ask (here a version the head has not reached, 404; as for a version no longer kept, 409, or a
    kind without ``head_changes``, 404): the feed says nothing from then on and keeps its version."""
    task = coordinator.create_task(params={"blocks": 2, "dim": 2}, mode="async")
    client, joined = coordinator.join(task)
    api = Api(coordinator.url, max_retries=0)
    api.token = joined["token"]
    grant = client.post(f"/v1/tasks/{task['id']}/leases").json()
    with ThreadPoolExecutor(max_workers=1) as requests:
        feed = HttpHeadFeed(api, f"/v1/tasks/{task['id']}", grant["version"] + 1, requests)
        assert _first_news(feed, seconds=1.0) is None
    assert feed.quiet and feed() is None
    assert feed.version == grant["version"] + 1
    api.close()
