"""What an agent receives with a lease: the same envelope on the service path and the engine-only path."""

from __future__ import annotations

from typing import Any

from coordinator.engine.records import Snapshot
from tasks import capabilities
from tasks.base import Task


def contract_envelope(
    task: Task[Any],
    snap: Snapshot,
    block: int,
    budget: dict[str, Any] | None = None,
    since: Snapshot | None = None,
) -> dict[str, Any]:
    """What an agent receives with a lease: its block, the base version, the budget left, the task data.

    With ``since`` (the head of a contract the agent keeps), the kind may write the data against that one
    (``ContractDeltas``); the envelope then says ``since``, and otherwise the data is whole. ``data`` stays
    the last key (``wire_json`` splices the kind's rendered text there)."""
    envelope: dict[str, Any] = {"block": block, "version": snap.version, "budget": budget or {}}
    if since is not None:
        written = capabilities.contract_since(task, since.state, snap.state, block)
        if written is not None:
            envelope["since"] = since.version
            envelope["data"] = written
            return envelope
    envelope["data"] = task.contract(snap.state, block)
    return envelope
