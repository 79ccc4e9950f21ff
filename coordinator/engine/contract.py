"""What an agent receives with a lease: the same envelope on the service path and the engine-only path."""

from __future__ import annotations

from typing import Any

from coordinator.engine.records import Snapshot
from tasks.base import Task


def contract_envelope(
    task: Task[Any], snap: Snapshot, block: int, budget: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What an agent receives with a lease: its block, the base version, the budget left, the task data."""
    return {
        "block": block,
        "version": snap.version,
        "budget": budget or {},
        "data": task.contract(snap.state, block),
    }
