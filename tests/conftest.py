"""Shared fixtures: a real coordinator (uvicorn on a free loopback port) and helpers to drive it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from coordinator.api.embedded import EmbeddedServer
from coordinator.api.main import create_app
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore

pytest.register_assert_rewrite("blockopt.testing")  # the shipped contract suites: detailed assert messages

ADMIN = "test-admin-token-0123456789"
os.environ.setdefault("BLOCKOPT_STRICT_ACCOUNTING", "1")
"""Books that do not balance are a bug: in tests the engine raises instead of logging and counting them."""
REPO = Path(__file__).resolve().parent.parent


THREAD_GRACE = 5.0
"""Seconds a thread still running at the end of the session gets to finish before the session fails."""


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A session whose tests left a thread running fails, naming it. A daemon thread still inside an event
    loop while the interpreter exits can crash it after every test passed: CI once ended 1,130 passed
    tests in a segmentation fault, a live page's server left running by ``EmbeddedServer.stop``."""
    deadline = time.monotonic() + THREAD_GRACE
    running = [t for t in threading.enumerate() if t is not threading.main_thread()]
    for thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = sorted(t.name for t in running if t.is_alive())
    if left:
        sys.stderr.write(f"\nthreads still running after the tests ({THREAD_GRACE:g} s grace): {left}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def _compiled_routing_kernels() -> None:
    """Compile routing's kernels once, before any test starts worker processes: on a fresh clone each of them
    would otherwise compile them anew (about 6 s each) inside a timed run."""
    from tasks.routing import plan_jit, sipp_jit

    sipp_jit.warm()
    plan_jit.warm_counts()


@dataclass
class Coordinator:
    """A running coordinator and an admin client for it."""

    url: str
    settings: ServiceSettings
    admin: httpx.Client
    store: MemoryStore
    clients: list[httpx.Client] = field(default_factory=list)

    def create_task(self, **body: Any) -> dict[str, Any]:
        body.setdefault("kind", "quadratic")
        body.setdefault("params", {"blocks": 4, "dim": 3})
        r = self.admin.post("/v1/tasks", json=body)
        assert r.status_code == 201, r.text
        return r.json()

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        c = httpx.Client(base_url=self.url, headers=headers, timeout=30.0)
        self.clients.append(c)
        return c

    def join(self, task: dict[str, Any], name: str = "t") -> tuple[httpx.Client, dict[str, Any]]:
        """Join as an agent does: while the task is being prepared (a sqlplan task on a fresh cache generates
        TPC-H first), wait ``retry_after`` and ask again (``test_preparing.py`` checks the 429 itself)."""
        client, deadline = self.client(task["join_token"]), time.monotonic() + 120
        while True:
            r = client.post(f"/v1/tasks/{task['id']}/agents", json={"name": name})
            preparing = r.status_code == 429 and r.json()["error"]["code"] == "task_preparing"
            if not preparing or time.monotonic() > deadline:
                break
            time.sleep(float(r.json()["error"]["retry_after"]))
        assert r.status_code == 201, r.text
        joined = r.json()
        return self.client(joined["token"]), joined

    def wait_for(
        self, task_id: str, pred: Callable[[dict[str, Any]], bool], timeout: float = 60.0
    ) -> dict[str, Any]:
        """Poll the task view until ``pred`` holds (no fixed sleeps: returns as soon as it does)."""
        deadline = time.monotonic() + timeout
        while True:
            view = self.admin.get(f"/v1/tasks/{task_id}").json()
            if pred(view):
                return view
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting; last view {view}")
            time.sleep(0.05)


def start_coordinator(**overrides: Any) -> tuple[EmbeddedServer, Coordinator]:
    settings = ServiceSettings(admin_token=SecretStr(ADMIN), **overrides)
    store = MemoryStore()
    server = EmbeddedServer(create_app(settings, store, CollectorRegistry()))
    server.start()
    admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30.0)
    return server, Coordinator(server.url, settings, admin, store)


@pytest.fixture
def coordinator_factory() -> Iterator[Callable[..., Coordinator]]:
    started: list[tuple[EmbeddedServer, Coordinator]] = []

    def make(**overrides: Any) -> Coordinator:
        pair = start_coordinator(**overrides)
        started.append(pair)
        return pair[1]

    yield make
    for server, coord in started:
        for c in [coord.admin, *coord.clients]:
            c.close()
        server.stop()


@pytest.fixture
def coordinator(coordinator_factory: Callable[..., Coordinator]) -> Coordinator:
    return coordinator_factory(lease_ttl=5.0, round_deadline=0.5)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def blockopt_process(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """A real ``blockopt`` CLI process (``python -m blockopt``) with this checkout on its path."""
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "blockopt", *args],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def agent_process(coord: Coordinator, task: dict[str, Any], *extra: str) -> subprocess.Popen[bytes]:
    return blockopt_process(
        "agent",
        "--coordinator",
        coord.url,
        "--task",
        task["id"],
        *extra,
        env={"BLOCKOPT_JOIN_TOKEN": task["join_token"]},
    )
