"""Run the app with uvicorn on a loopback port inside this process (for `blockopt run` and tests)."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import uvicorn
from fastapi import FastAPI


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when the
    # listening socket says TCP; with proto 0 every response waits ~40 ms (Nagle + delayed ACK).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


SHUTDOWN_GRACE = 2
"""Seconds a server that is told to stop lets open responses finish before uvicorn cancels them (this one
and ``blockopt serve``'s). An event stream of a task that is still open (a live page left open) never
finishes by itself: unbounded, ``EmbeddedServer.stop`` returned with the server still running (a daemon
thread inside an event loop while the interpreter exits can crash it: a test session that passed ended in a
segmentation fault), and ``blockopt serve`` did not exit on SIGTERM."""


class EmbeddedServer:
    """uvicorn in a daemon thread on an already bound socket, so the port is known before it starts."""

    def __init__(
        self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"
    ) -> None:
        self.sock = bind(host, port)
        self.host, self.port = self.sock.getsockname()[:2]
        config = uvicorn.Config(
            app,
            log_level=log_level,
            access_log=False,
            lifespan="on",
            timeout_keep_alive=30,
            timeout_graceful_shutdown=SHUTDOWN_GRACE,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="blockopt-uvicorn", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> str:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the embedded coordinator did not start")
            time.sleep(0.01)
        return self.url

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the server down and wait for its thread; RuntimeError if it is still running after
        ``timeout`` seconds and a forced exit."""
        self.server.should_exit = True
        self.thread.join(max(timeout, SHUTDOWN_GRACE + 1.0))
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(timeout)
        self.sock.close()
        if self.thread.is_alive():
            raise RuntimeError(f"the embedded coordinator at {self.url} did not stop")

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
