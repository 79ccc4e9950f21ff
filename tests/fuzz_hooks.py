"""Schemathesis hooks for the API fuzz run (``tests/test_fuzz_api.py``): credentials as an agent gets them.

Loaded by the ``st`` CLI through ``SCHEMATHESIS_HOOKS=tests.fuzz_hooks``. Every
response is watched: task creation yields the task's join and read tokens, a
join yields an agent token. Every request then carries the credential its
route needs for the task in its path (admin for administration, the join
token to join, the agent token for agent routes, the read token for reads),
so the fuzzer gets past the front door exactly the way an agent does. Tasks it
creates are kept small and short-lived (a few seconds of budget) so event
streams end and the run stays bounded.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import httpx
import schemathesis

ADMIN = os.environ.get("BLOCKOPT_FUZZ_ADMIN_TOKEN", "")
URL = os.environ.get("BLOCKOPT_FUZZ_URL", "")
TASK_SECONDS = float(os.environ.get("BLOCKOPT_FUZZ_TASK_SECONDS", "5"))
MAX_SIZE = {"blocks": 6, "dim": 4, "robots": 4}
"""Caps on size parameters of fuzzed tasks (values within the schema's bounds only, so negative cases stay so)."""

_lock = threading.Lock()
JOIN: dict[str, str] = {}
READ: dict[str, str] = {}
AGENT: dict[str, str] = {}

AGENT_ROUTES = ("/leases", "/proposals")
READ_ROUTES = (
    "/v1/tasks/{task_id}",
    "/v1/tasks/{task_id}/rounds",
    "/v1/tasks/{task_id}/report",
    "/v1/tasks/{task_id}/solution",
    "/v1/tasks/{task_id}/events",
    "/v1/tasks/{task_id}/trajectories",
    "/v1/tasks/{task_id}/agents",
    "/v1/tasks/{task_id}/view",
)


def credential(path: str, method: str, task_id: Any) -> str | None:
    """The bearer token an honest client would send on this route for this task."""
    if path in ("/metrics", "/healthz", "/readyz", "/openapi.json"):
        return None
    task = task_id if isinstance(task_id, str) else None
    if any(part in path for part in AGENT_ROUTES) and task is not None:
        agent = agent_token(task)
        if agent is not None:
            return agent
    with _lock:
        if path.endswith("/agents") and method == "POST" and task in JOIN:
            return JOIN[task]
        if path in READ_ROUTES and method == "GET" and task in READ:
            return READ[task]
    return ADMIN


def agent_token(task: str) -> str | None:
    """This task's agent token; the first time, join with the task's join token as an agent does."""
    with _lock:
        if task in AGENT:
            return AGENT[task]
        join = JOIN.get(task)
    if join is None or not URL:
        return None
    r = httpx.post(
        f"{URL}/v1/tasks/{task}/agents",
        json={"name": "fuzz"},
        timeout=30,
        headers={"Authorization": f"Bearer {join}"},
    )
    if r.status_code != 201:
        return None
    with _lock:
        return AGENT.setdefault(task, r.json()["token"])


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    token = credential(case.operation.path, case.method.upper(), (case.path_parameters or {}).get("task_id"))
    headers = dict(case.headers or {})
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    case.headers = headers
    if case.operation.path == "/v1/tasks" and case.method.upper() == "POST":
        case.body = bounded_task(case.body)  # here, not in map_body: every phase passes through


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    if response.status_code != 201:
        return
    path = case.operation.path
    try:
        body = response.json()
    except ValueError:
        return
    with _lock:
        if path == "/v1/tasks" and case.method.upper() == "POST":
            JOIN[body["id"]] = body["join_token"]
            READ[body["id"]] = body["read_token"]
        elif path.endswith("/agents"):
            AGENT.setdefault(case.path_parameters["task_id"], body["token"])  # one agent per task: its
            # proposals stay its own, so polling them with the same token is allowed


def _small(params: dict[str, Any]) -> None:
    for name, cap in MAX_SIZE.items():
        value = params.get(name)
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and value == int(value)
            and 1 <= value
        ):
            params[name] = min(int(value), cap)


def bounded_task(body: Any) -> Any:
    """A task the fuzzer creates: small, and ended by a seconds budget (so its event stream ends)."""
    if not isinstance(body, dict):
        return body
    params = body.get("params")
    if isinstance(params, dict):
        body = {**body, "params": dict(params)}
        _small(body["params"])
    budgets = body.get("budgets", {})
    if isinstance(budgets, dict):
        seconds = budgets.get("seconds")
        if seconds is None or (
            isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0
        ):
            budgets = {**budgets, "seconds": min(float(seconds or TASK_SECONDS), TASK_SECONDS)}
            body = {**body, "budgets": budgets}
    return body
