"""``blockopt serve --api-workers N --engine-workers M``: start the processes, watch them, stop them.

The parent binds the listening socket once and hands it to every API process (as uvicorn's own
multi-worker mode does), starts the engine processes, then only watches:

- SIGTERM or Ctrl-C stops every child (SIGTERM, then SIGKILL after ``GRACE`` seconds) and exits 0;
- a child that dies on its own is reported on one line; the others keep serving (a dead engine's tasks
  pass to the others through the round lock) and the supervisor exits 1 when it is stopped, or at once
  when no API or no engine process is left of those it started.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import signal
import socket
import sys
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

from blockopt.logs import setup_logging
from coordinator.settings import ServiceSettings

log = logging.getLogger("blockopt.serve")
GRACE = 10.0
"""Seconds a child has to stop after SIGTERM."""


@dataclass(frozen=True)
class HttpOptions:
    host: str
    port: int
    log_level: str
    http: str
    loop: str


def split_problem(settings: ServiceSettings) -> str | None:
    """Why these worker counts cannot run on this store (one line), or None."""
    api, engines = settings.api_workers, settings.engine_workers
    if api == 0 and not engines:
        return "--api-workers 0 needs --engine-workers 1 or more (else this node runs nothing)"
    if settings.store == "memory" and (engines is not None or api > 1):
        return "--api-workers above 1 and --engine-workers need a shared store: --store redis://... or sqlite:///..."
    return None


def is_split(settings: ServiceSettings) -> bool:
    """Whether ``blockopt serve`` runs child processes rather than one uvicorn in its own process."""
    return settings.engine_workers is not None or settings.api_workers != 1


def _api_main(settings: ServiceSettings, sock: socket.socket, options: HttpOptions) -> None:
    import uvicorn

    from coordinator.api.embedded import SHUTDOWN_GRACE
    from coordinator.api.worker import api_app

    setup_logging(options.log_level)
    from coordinator.runtime import heap

    signal.signal(signal.SIGTERM, lambda signum, frame: None)  # uvicorn re-raises it after its shutdown
    app = api_app(settings)
    heap.settle()
    config = uvicorn.Config(
        app,
        log_level=options.log_level,
        access_log=False,
        http=options.http,
        loop=options.loop,
        timeout_graceful_shutdown=SHUTDOWN_GRACE,  # an open event stream would hold SIGTERM forever
    )
    uvicorn.Server(config).run(sockets=[sock])


def _engine_main(settings: ServiceSettings, index: int, options: HttpOptions) -> None:
    from coordinator.runtime.engine_worker import engine_main

    setup_logging(options.log_level)
    engine_main(settings, index, options.host)


@dataclass
class Child:
    role: str
    index: int
    process: BaseProcess

    @property
    def name(self) -> str:
        return f"{self.role} worker {self.index}"


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def supervise(settings: ServiceSettings, options: HttpOptions) -> int:
    """Run the API and engine processes until a signal, or until a whole tier has died; the exit code."""
    ctx = multiprocessing.get_context("spawn")
    children: list[Child] = []
    sock: socket.socket | None = None
    if settings.api_workers > 0:
        import uvicorn

        sock = uvicorn.Config(app="", host=options.host, port=options.port).bind_socket()
    stopping = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for i in range(settings.api_workers):
        p = ctx.Process(target=_api_main, args=(settings, sock, options), name=f"blockopt-api-{i}")
        children.append(Child("api", i, p))
    for i in range(settings.engine_workers or 0):
        p = ctx.Process(target=_engine_main, args=(settings, i, options), name=f"blockopt-engine-{i}")
        children.append(Child("engine", i, p))
    for child in children:
        child.process.start()
        log.info("%s started (pid %s)", child.name, child.process.pid)
    if sock is not None:
        log.info("API on http://%s:%d (%d processes)", options.host, options.port, settings.api_workers)
    code = 0
    alive = list(children)
    try:
        while not stopping:
            multiprocessing.connection.wait([c.process.sentinel for c in alive], timeout=0.2)
            for child in [c for c in alive if not c.process.is_alive()]:
                alive.remove(child)
                code = 1
                how = _exit_text(child.process.exitcode)
                print(
                    f"blockopt serve: {child.name} (pid {child.process.pid}) {how}",
                    file=sys.stderr,
                    flush=True,
                )
            roles = {c.role for c in alive}
            if any(c.role not in roles for c in children):
                print("blockopt serve: no process of a tier is left; stopping", file=sys.stderr, flush=True)
                break
    finally:
        _stop_all(alive)
        if sock is not None:
            sock.close()
    return code


def _stop_all(children: list[Child]) -> None:
    for child in children:
        if child.process.is_alive():
            child.process.terminate()
    deadline = time.monotonic() + GRACE
    for child in children:
        child.process.join(max(0.0, deadline - time.monotonic()))
        if child.process.is_alive():
            log.warning("%s did not stop in %.0f s: killed", child.name, GRACE)
            child.process.kill()
            child.process.join()
