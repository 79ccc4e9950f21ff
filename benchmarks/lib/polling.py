"""Waiting on a task from a benchmark driver: through ``preparing`` and ``running`` to its end.

A task is ``preparing`` until its kind has its reference and first plan (sqlplan's first run on a machine
generates the TPC-H database then), and ``running`` after. A driver that waited only while ``running``
asked a preparing task for its solution and got 429 ``task_preparing``.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from coordinator.status import TERMINAL


def wait_until_ended(client: httpx.Client, task_id: str, every: float = 0.5) -> dict[str, Any]:
    """The task's view once its status is terminal, polled every ``every`` seconds."""
    while (view := client.get(f"/v1/tasks/{task_id}").json())["status"] not in TERMINAL:
        time.sleep(every)
    return dict(view)
