"""Schemathesis hooks for the API fuzz run (``tests/coordinator/api/test_fuzz_api.py``): credentials as an agent gets them.

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

import itertools
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
PROPOSALS: dict[str, str] = {}
"""Task id -> the last proposal its agent submitted and had acknowledged (200 or 202)."""
POLL = "/v1/tasks/{task_id}/proposals/{proposal_id}"
_polls = itertools.count()
_seeded = itertools.count()
RENEW = "/v1/tasks/{task_id}/leases/{lease_id}/renew"
SUBMIT = "/v1/tasks/{task_id}/proposals"
AIMED_RENEWS = 1
_renews = itertools.count()
_aimed_renews = itertools.count()
_aimed_submits = itertools.count()

AGENT_ROUTES = ("/leases", "/proposals", "/changes")
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


def lease_as_an_agent(client: httpx.Client, name: str) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
    """(task, agent token, lease) of a new small task, joined and leased the way an agent does; None if a
    step is refused. The task's tokens are recorded, so later cases on it carry the right credentials."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    created = client.post(
        "/v1/tasks", json={"kind": "quadratic", "params": {"blocks": 2, "dim": 2}}, headers=admin
    )
    if created.status_code != 201:
        return None
    task = created.json()
    joined = client.post(
        f"/v1/tasks/{task['id']}/agents",
        json={"name": name},
        headers={"Authorization": f"Bearer {task['join_token']}"},
    )
    if joined.status_code != 201:
        return None
    token = joined.json()["token"]
    grant = client.post(f"/v1/tasks/{task['id']}/leases", headers={"Authorization": f"Bearer {token}"})
    if grant.status_code != 201:
        return None
    with _lock:
        JOIN[task["id"]], READ[task["id"]] = task["join_token"], task["read_token"]
        AGENT[task["id"]] = token
    return task, token, grant.json()


def unchanged_answer(lease: dict[str, Any]) -> dict[str, Any]:
    """A valid proposal for ``lease``: its block's current value (a quadratic task's ``x``)."""
    return {
        "lease_id": lease["lease_id"],
        "block": lease["block"],
        "base_version": lease["version"],
        "value": lease["contract"]["data"]["x"],
        "predicted_improvement": 0.0,
    }


def seed_a_proposal() -> None:
    """One proposal acknowledged the way an agent gets one (create, join, lease, submit its block's current
    value): submits succeed only deep in stateful scenarios, and polls come earlier."""
    with httpx.Client(base_url=URL, timeout=30) as client:
        got = lease_as_an_agent(client, "fuzz-seed")
        if got is None:
            return
        task, token, lease = got
        body = unchanged_answer(lease)
        submitted = client.post(
            f"/v1/tasks/{task['id']}/proposals",
            json=body,
            params={"wait": 0},
            headers={"Authorization": f"Bearer {token}"},
        )
    if submitted.status_code in (200, 202):
        with _lock:
            PROPOSALS[task["id"]] = submitted.json()["id"]


def fresh_lease(name: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(task, lease) of ``lease_as_an_agent`` on its own connection."""
    with httpx.Client(base_url=URL, timeout=30) as client:
        got = lease_as_an_agent(client, name)
    return None if got is None else (got[0], got[2])


def aim_a_submit_at_a_held_lease(case: Any) -> None:
    """The first positive submit answers a lease its agent really holds, with its block's current value:
    a stateful scenario chains a lease to a valid submit only in some runs (one full run in four here
    went without a 2xx on the route)."""
    meta = case.meta
    if meta is None or meta.generation.mode != "positive" or next(_aimed_submits):
        return
    got = fresh_lease("fuzz-submit")
    if got is None:
        return
    task, lease = got
    case.path_parameters = {**(case.path_parameters or {}), "task_id": task["id"]}
    case.body = unchanged_answer(lease)


def aim_at_a_held_lease(case: Any) -> None:
    """The first positive renews (``AIMED_RENEWS``, every other one) name a lease its agent really holds.
    Generated lease ids never exist, and a stateful scenario chains a lease to its renew only in some runs
    (one full run in five here went without a 2xx on the route); an agent renews the leases it holds."""
    meta = case.meta
    if meta is None or meta.generation.mode != "positive" or next(_renews) % 2:
        return
    if next(_aimed_renews) >= AIMED_RENEWS:
        return
    got = fresh_lease("fuzz-renew")
    if got is None:
        return
    task, lease = got
    case.path_parameters = {
        **(case.path_parameters or {}), "task_id": task["id"], "lease_id": lease["lease_id"]
    }  # fmt: skip


def aim_at_a_known_proposal(case: Any) -> None:
    """Every other positive poll asks for a proposal the agent really submitted. Generated ids never exist,
    so otherwise the poll route answers 2xx only when a stateful scenario happens to chain a successful
    submit to it, which some runs never do; an agent polls the ids it was given, so this is its real use."""
    meta = case.meta
    if meta is None or meta.generation.mode != "positive" or next(_polls) % 2:
        return
    if not PROPOSALS and next(_seeded) == 0:
        seed_a_proposal()
    with _lock:
        if not PROPOSALS:
            return
        task = (case.path_parameters or {}).get("task_id")
        if task not in PROPOSALS:
            task = next(reversed(PROPOSALS))
        proposal = PROPOSALS[task]
    case.path_parameters = {**(case.path_parameters or {}), "task_id": task, "proposal_id": proposal}


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if case.operation.path == POLL and case.method.upper() == "GET":
        aim_at_a_known_proposal(case)
    if case.operation.path == RENEW and case.method.upper() == "POST":
        aim_at_a_held_lease(case)
    if case.operation.path == SUBMIT and case.method.upper() == "POST":
        aim_a_submit_at_a_held_lease(case)
    token = credential(case.operation.path, case.method.upper(), (case.path_parameters or {}).get("task_id"))
    headers = dict(case.headers or {})
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    case.headers = headers
    if case.operation.path == "/v1/tasks" and case.method.upper() == "POST":
        case.body = bounded_task(case.body)  # here, not in map_body: every phase passes through


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    submitted = case.operation.path == "/v1/tasks/{task_id}/proposals" and case.method.upper() == "POST"
    if submitted and response.status_code in (200, 202):
        try:
            proposal = response.json()["id"]
        except (ValueError, KeyError, TypeError):
            return
        with _lock:
            PROPOSALS[case.path_parameters["task_id"]] = proposal
        return
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
