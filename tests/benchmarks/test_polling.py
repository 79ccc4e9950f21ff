"""A benchmark driver waits on a task through ``preparing`` and ``running`` to its end."""

from __future__ import annotations

import httpx

from benchmarks.lib.polling import wait_until_ended


def test_a_task_is_waited_on_while_it_prepares_and_runs() -> None:
    statuses = iter(["preparing", "preparing", "running", "stalled"])
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(200, json={"id": "t-1", "status": next(statuses)})

    with httpx.Client(base_url="http://coordinator", transport=httpx.MockTransport(handler)) as client:
        view = wait_until_ended(client, "t-1", every=0.0)
    # a driver that stopped at "not running" asked a preparing task for its solution (429 task_preparing)
    assert view["status"] == "stalled"
    assert asked == ["/v1/tasks/t-1"] * 4
