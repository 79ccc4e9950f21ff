"""Agent-side pieces: proposer factory, HTTP retries against real servers, fleet splitting."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from agents.fleet import shares
from agents.http import Api, ApiError, GaveUp
from agents.proposers import ThinkingProposer, UnknownProposer, make_proposer, register_proposer
from agents.worker import Worker, WorkerConfig, WorkerStats
from coordinator.api.embedded import EmbeddedServer, bind
from tasks.base import Draft, Proposer, Task
from tasks.registry import create_task
from tests.conftest import Coordinator


def quad() -> Task[Any]:
    return create_task("quadratic", {"blocks": 2, "dim": 2})


def test_factory_builds_the_heuristic_with_knobs() -> None:
    p = make_proposer("heuristic", quad(), {"noise": 0.1}, seed=3)
    assert getattr(p, "noise", None) == 0.1
    assert isinstance(make_proposer("heuristic", quad(), {}, 0, {"delay_s": "0.5"}), ThinkingProposer)


def test_factory_rejects_unknown_names_and_options() -> None:
    with pytest.raises(UnknownProposer, match="nosuch"):
        make_proposer("nosuch", quad(), {}, 0)
    with pytest.raises(UnknownProposer, match="colour"):
        make_proposer("heuristic", quad(), {}, 0, {"colour": "red"})


def test_factory_is_pluggable() -> None:
    class Fixed(Proposer):
        def propose(self, contract: Any) -> Draft | None:
            return None

    register_proposer("fixed-for-test")(lambda task, knobs, seed, options: Fixed())
    assert isinstance(make_proposer("fixed-for-test", quad(), {}, 0), Fixed)


def test_shares() -> None:
    assert shares(10, 3) == [4, 3, 3]
    assert shares(2, 5) == [1, 1]
    assert sum(shares(64, 7)) == 64


def test_backoff_is_jittered_and_capped() -> None:
    api = Api("http://127.0.0.1:9", backoff_base=0.1, backoff_max=1.0, seed=1)
    waits = [api.backoff(a) for a in range(12)]
    assert all(0 <= w <= 1.0 for w in waits)
    assert len(set(waits)) == len(waits)
    api.close()


def flaky_app(failures: int, status: int = 503) -> tuple[FastAPI, list[int]]:
    app = FastAPI()
    seen: list[int] = []

    @app.get("/thing")
    async def thing() -> JSONResponse:
        seen.append(1)
        if len(seen) <= failures:
            return JSONResponse(
                {"error": {"code": "unavailable", "message": "try later"}}, status_code=status
            )
        return JSONResponse({"ok": True})

    @app.get("/busy")
    async def busy() -> JSONResponse:
        return JSONResponse(
            {"error": {"code": "rate_limited", "message": "slow", "retry_after": 0.25}},
            status_code=429,
            headers={"Retry-After": "1"},
        )

    return app, seen


def test_retries_5xx_then_succeeds() -> None:
    app, seen = flaky_app(failures=2)
    with EmbeddedServer(app) as server:
        api = Api(server.url, backoff_base=0.01, max_retries=3)
        assert api.call("GET", "/thing").json() == {"ok": True}
        assert len(seen) == 3
        api.close()


def test_gives_up_after_retries_with_the_last_error() -> None:
    app, seen = flaky_app(failures=100, status=500)
    with EmbeddedServer(app) as server:
        api = Api(server.url, backoff_base=0.01, max_retries=2)
        with pytest.raises(ApiError) as err:
            api.call("GET", "/thing")
        assert err.value.status == 500 and len(seen) == 3
        api.close()


def test_a_503_outage_longer_than_the_retries_is_waited_out() -> None:
    """The store is down for longer than ``max_retries`` backoffs: 503s are retried while the patience lasts."""
    app, seen = flaky_app(failures=12)
    with EmbeddedServer(app) as server:
        api = Api(server.url, backoff_base=0.01, backoff_max=0.02, max_retries=2, unavailable_patience=30.0)
        assert api.call("GET", "/thing").json() == {"ok": True}
        assert len(seen) == 13
        api.close()


def test_a_503_outage_past_the_patience_gives_up_with_the_reason() -> None:
    app, seen = flaky_app(failures=10_000)
    with EmbeddedServer(app) as server:
        api = Api(server.url, backoff_base=0.01, backoff_max=0.02, max_retries=2, unavailable_patience=0.3)
        with pytest.raises(ApiError) as err:
            api.call("GET", "/thing")
        assert (err.value.status, err.value.code) == (503, "unavailable") and len(seen) > 3
        api.close()


def test_4xx_is_not_retried_and_carries_retry_after() -> None:
    app, _ = flaky_app(0)
    with EmbeddedServer(app) as server:
        api = Api(server.url, backoff_base=0.01)
        with pytest.raises(ApiError) as err:
            api.call("GET", "/busy")
        assert (err.value.status, err.value.code, err.value.retry_after) == (429, "rate_limited", 0.25)
        api.close()


def test_connection_refused_gives_up() -> None:
    sock = bind()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()  # nothing listens there now
    api = Api(url, backoff_base=0.01, max_retries=2)
    with pytest.raises(GaveUp):
        api.call("GET", "/anything")
    api.close()


def test_worker_threads_converge_and_stop_cleanly(coordinator: Coordinator) -> None:
    task = coordinator.create_task(params={"blocks": 4, "dim": 2, "coupling": 0.4}, mode="async")
    stop = threading.Event()
    workers = [
        Worker(WorkerConfig(coordinator.url, task["id"], task["join_token"], name=f"w{i}", seed=i), stop)
        for i in range(2)
    ]
    results: list[Any] = []
    threads = [threading.Thread(target=lambda w=w: results.append(w.run())) for w in workers]
    for t in threads:
        t.start()
    view = coordinator.wait_for(task["id"], lambda v: v["status"] != "running", timeout=60)
    for t in threads:
        t.join(30)
    assert view["status"] == "optimal" and view["relative_gap"] <= 1e-10
    assert sorted(r.ended for r in results) == ["task_finished", "task_finished"]
    assert sum(r.accepted for r in results) > 0
    rounds = coordinator.admin.get(f"/v1/tasks/{task['id']}/rounds").json()["rounds"]
    assert rounds and all(r["a_priori_held"] is not False for r in rounds)


def test_worker_with_a_bad_join_token_ends(coordinator: Coordinator) -> None:
    task = coordinator.create_task()
    stats = Worker(WorkerConfig(coordinator.url, task["id"], "join_wrong", max_retries=0)).run()
    assert stats.ended == "unauthorized"


def test_worker_survives_unreachable_coordinator() -> None:
    sock = bind()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()
    stats = Worker(WorkerConfig(url, "t-x", "j", max_retries=1)).run()
    assert stats.ended == "unreachable"
    _ = httpx  # keep the import honest for type checkers


@pytest.mark.parametrize("command", ["agent", "fleet"])
def test_an_agent_process_settles_its_heap_before_it_works(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's searches allocate fast: with Python's collector defaults a 16-agent replay spent a fifth
    of its CPU in full collections (docs/notes/2026-12-06-heap-and-early-answers.md). The process settles
    first, as the coordinator's does."""
    import agents.fleet
    import agents.worker
    from blockopt import cli
    from coordinator.runtime import heap

    order: list[str] = []
    monkeypatch.setattr(heap, "settle", lambda: order.append("settled"))
    monkeypatch.setattr(
        agents.worker.Worker, "run", lambda self: order.append("worked") or WorkerStats(ended="stopped")
    )
    monkeypatch.setattr(agents.fleet, "run_fleet", lambda *a: order.append("worked") or 0)
    monkeypatch.setenv("BLOCKOPT_JOIN_TOKEN", "j")
    assert cli.main([command, "--coordinator", "http://127.0.0.1:9", "--task", "t"]) == 0
    assert order == ["settled", "worked"]


class _FindsNothing(Proposer):
    def __init__(self, retry_pause: float) -> None:
        self.retry_pause = retry_pause

    def propose(self, contract: Any) -> Draft | None:
        return None


@pytest.mark.parametrize("retry_pause", [0.0, 0.0123])
def test_after_a_search_that_found_nothing_the_worker_waits_its_proposers_retry_pause(
    retry_pause: float, coordinator: Coordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A randomized search leases again at once: one routing agent that waited 0.05 s after each search
    that found nothing spent a fifth of its run in those waits (docs/notes/2026-12-06-the-late-phase.md).
    A search that is the same on the same contract waits for the plan to move."""
    name = f"finds-nothing-{retry_pause}"
    register_proposer(name)(lambda task, knobs, seed, options: _FindsNothing(retry_pause))
    task = coordinator.create_task(params={"blocks": 2, "dim": 2}, mode="async")
    worker = Worker(WorkerConfig(coordinator.url, task["id"], task["join_token"], proposer=name))
    events: list[Any] = []
    abandon, call = worker.abandon, worker.api.call
    monkeypatch.setattr(worker, "abandon", lambda *a: events.append("abandon") or abandon(*a))
    monkeypatch.setattr(worker, "_wait", lambda seconds, default=0.2: events.append(seconds))
    leased: list[str] = []  # POST /leases requests
    monkeypatch.setattr(
        worker.api,
        "call",
        lambda method, path, **kw: (
            (method == "POST" and path.endswith("/leases") and leased.append(path))
            or call(method, path, **kw)
        ),
    )
    worker.join()
    for _ in range(4):
        assert worker.step()
    assert worker.stats.abandoned == 4 and worker.stats.leases == 4
    assert events == (["abandon"] * 4 if retry_pause == 0 else ["abandon", retry_pause] * 4)
    # leasing again at once, it asks for the next lease with its report: one request per search
    assert len(leased) == (1 if retry_pause == 0 else 4)


def test_a_worker_warms_its_kind_up_after_joining_before_its_first_lease(
    coordinator: Coordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a fresh install a routing worker compiled the kernels (about 6 s) inside its first proposals'
    budgets, which then found nothing (a fresh clone's CI, b2482e4); now it warms the kind up first."""
    from tasks.routing.task import RoutingTask

    params = {"map": "random-32-32-10", "robots": 20, "blocks": 2, "exact_limit": 0, "initial": "shortest"}
    task = coordinator.create_task(kind="routing", params=params, mode="async")
    coordinator.wait_for(task["id"], lambda v: v["status"] != "preparing")
    mine = threading.current_thread()  # the coordinator's own warm-ups run in its threads
    order: list[str] = []
    warm = RoutingTask.warm_up
    monkeypatch.setattr(
        RoutingTask,
        "warm_up",
        lambda self: (threading.current_thread() is mine and order.append("warmed")) or warm(self),
    )
    worker = Worker(WorkerConfig(coordinator.url, task["id"], task["join_token"]))
    call = worker.api.call
    monkeypatch.setattr(
        worker.api,
        "call",
        lambda method, path, **kw: (
            (method == "POST" and path.endswith(("/agents", "/leases")) and order.append(path.split("/")[-1]))
            or call(method, path, **kw)
        ),
    )
    worker.join()
    assert worker.step()
    assert order[:3] == ["agents", "warmed", "leases"]
