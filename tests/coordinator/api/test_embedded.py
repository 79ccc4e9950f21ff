"""The in-process server (``blockopt run``, the tests) stops when told, even with responses still open."""

from __future__ import annotations

import threading
import time

import httpx

from tests.conftest import ADMIN, start_coordinator


def test_stop_ends_the_server_while_an_open_tasks_event_stream_is_read() -> None:
    """A live page left open on a task that never ends holds an event stream that never finishes by itself;
    ``stop`` must still end the server's thread (it used to return with it running, and a session that
    passed crashed at exit)."""
    server, coord = start_coordinator()
    task = coord.create_task()
    opened = threading.Event()

    def read_the_stream() -> None:
        headers = {"Authorization": f"Bearer {ADMIN}"}
        try:
            with httpx.stream(
                "GET", f"{server.url}/v1/tasks/{task['id']}/events", headers=headers, timeout=60.0
            ) as r:
                opened.set()
                for _ in r.iter_bytes():
                    pass
        except httpx.HTTPError:
            pass  # the server went away under the stream: what stop does

    reader = threading.Thread(target=read_the_stream, name="event-stream-reader")
    reader.start()
    assert opened.wait(30), "the event stream did not open"
    time.sleep(1.0)  # the stream is past its first pass, waiting for a change that will not come
    coord.admin.close()
    server.stop()
    assert not server.thread.is_alive()
    reader.join(30)
    assert not reader.is_alive()
