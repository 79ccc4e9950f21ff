"""Who may read a task: private by default.

A task's solution, report, rounds, events and trajectories are a customer's
data. Reading one needs the admin token, the task's read token (returned once
at creation) or an agent token of that task; ``--public-read`` opts out.
Listing every task needs the admin token. ``/metrics`` needs the metrics token
when one is set.
"""

from __future__ import annotations

import hmac

from pydantic import SecretStr

from coordinator import errors
from coordinator.runtime import auth
from coordinator.runtime.service import CoordinatorService
from coordinator.settings import ServiceSettings


def _is_admin(admin: SecretStr | None, token: str) -> bool:
    return admin is not None and hmac.compare_digest(token.encode(), admin.get_secret_value().encode())


async def check_read(
    service: CoordinatorService, settings: ServiceSettings, task_id: str | None, header: str | None
) -> None:
    """Return when the bearer of ``header`` may read ``task_id`` (all tasks when None), else raise
    Unauthorized (401: no token, or one that grants nothing here) or NotFound (unknown task)."""
    if settings.public_read:
        return
    token = auth.bearer(header)
    if _is_admin(settings.admin_token, token):
        return
    if task_id is None:
        raise errors.Unauthorized("listing tasks needs the admin token")
    read_hash = await service.read_token_hash(task_id)
    if read_hash and auth.matches(token, read_hash):
        return
    digest = auth.token_hash(token)
    agent = await service.store.agent_by_token(task_id, digest)
    if agent is not None and auth.matches(token, agent.token_hash):
        return
    raise errors.Unauthorized(
        "reading this task needs the admin token, its read token or one of its agent tokens"
    )


def check_metrics(settings: ServiceSettings, header: str | None) -> None:
    if settings.metrics_token is None:
        return
    if not hmac.compare_digest(
        auth.bearer(header).encode(), settings.metrics_token.get_secret_value().encode()
    ):
        raise errors.Unauthorized("the metrics token does not match")
