"""Redis for tests: the shared server (REDIS_URL), a private server for restarts, replica processes.

Every test gets its own key prefix and, at the end, every key under it is
deleted and a SCAN checks that nothing is left. Without a reachable Redis the
tests skip (saying how to start one), unless ``BLOCKOPT_REQUIRE_REDIS=1``
(CI), where they fail.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.conftest import ADMIN, REPO

DEFAULT_URL = "redis://127.0.0.1:6379/0"
START_HINT = 'redis-server --daemonize yes --port 6379 --save "" --appendonly no'


def redis_url() -> str:
    return os.environ.get("REDIS_URL", DEFAULT_URL)


def require_redis(url: str | None = None) -> str:
    """The URL of a reachable Redis, else skip (fail when BLOCKOPT_REQUIRE_REDIS=1)."""
    url = url or redis_url()
    try:
        with redis.Redis.from_url(url, socket_connect_timeout=1.0) as r:
            r.ping()
    except redis.RedisError as exc:
        message = f"no Redis at {url} ({type(exc).__name__}); start one with: {START_HINT} (or set REDIS_URL)"
        if os.environ.get("BLOCKOPT_REQUIRE_REDIS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return url


def new_prefix() -> str:
    return f"blockopt-test:{uuid.uuid4().hex[:12]}:"


def purge(url: str, prefix: str) -> list[str]:
    """Delete every key under ``prefix``; return what a SCAN still finds afterwards (should be nothing)."""
    with redis.Redis.from_url(url, decode_responses=True) as r:
        keys = list(r.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            r.delete(*keys)
        return list(r.scan_iter(match=f"{prefix}*", count=1000))


@pytest.fixture
def redis_prefix() -> Iterator[tuple[str, str]]:
    """(url, prefix) of the shared Redis; every key under the prefix is gone afterwards."""
    url = require_redis()
    prefix = new_prefix()
    yield url, prefix
    assert purge(url, prefix) == [], f"keys left under {prefix}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(pred: Callable[[], Any], timeout: float, what: str, every: float = 0.05) -> Any:
    """Poll ``pred`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


@dataclass
class PrivateRedis:
    """A redis-server of this test alone (on a free port, AOF with fsync always), so it can be restarted."""

    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            message = "redis-server is not installed (apt-get install redis-server)"
            if os.environ.get("BLOCKOPT_REQUIRE_REDIS") == "1":
                pytest.fail(message)
            pytest.skip(message)
        self.proc = subprocess.Popen(
            [
                exe,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.workdir),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--logfile",
                str(self.workdir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self.ping, 20, f"private redis on port {self.port}")

    def ping(self) -> bool:
        try:
            with redis.Redis(port=self.port, socket_connect_timeout=0.5) as r:
                return bool(r.ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if the process has not exited within 15 s."""
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@dataclass
class Replica:
    """One ``blockopt serve --store redis://...`` process; its log goes to a file (no pipe to fill)."""

    name: str
    store_url: str
    prefix: str
    log_path: Path
    lock_ttl: float = 2.0
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Replica:
        self.launch()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        wait_until(self.ready, timeout, f"replica {self.name} /readyz")

    def launch(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_ADMIN_TOKEN": ADMIN}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "blockopt",
                    "serve",
                    "--port",
                    str(self.port),
                    "--store",
                    self.store_url,
                    "--redis-prefix",
                    self.prefix,
                    "--round-lock-ttl",
                    str(self.lock_ttl),
                    "--lease-ttl",
                    "3",
                    "--round-deadline",
                    "0.5",
                    "--log-level",
                    "info",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"replica {self.name} exited: {self.log()[-2000:]}")
        try:
            return httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGCONT)
        terminate(self.proc)


@dataclass
class Fleet:
    """A ``blockopt fleet`` process against one replica."""

    proc: subprocess.Popen[bytes]

    @classmethod
    def start(
        cls, replica: Replica, task: dict[str, Any], agents: int, log_path: Path, seed: int = 0
    ) -> Fleet:
        env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_JOIN_TOKEN": task["join_token"]}
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "blockopt",
                    "fleet",
                    "--coordinator",
                    replica.url,
                    "--task",
                    task["id"],
                    "--agents",
                    str(agents),
                    "--processes",
                    "1",
                    "--seed",
                    str(seed),
                    "--name",
                    f"fleet{seed}",
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return cls(proc)

    def stop(self) -> None:
        if self.proc.poll() is None:
            terminate(self.proc)


def admin(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30.0)


def create_task(replica: Replica, **body: Any) -> dict[str, Any]:
    body.setdefault("kind", "quadratic")
    with admin(replica.url) as c:
        r = c.post("/v1/tasks", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def view(replica: Replica, task_id: str) -> dict[str, Any] | None:
    """The task's view from this replica, or None when it does not answer."""
    try:
        r = httpx.get(
            f"{replica.url}/v1/tasks/{task_id}", timeout=10.0, headers={"Authorization": f"Bearer {ADMIN}"}
        )
    except httpx.HTTPError:
        return None
    return dict(r.json()) if r.status_code == 200 else None
