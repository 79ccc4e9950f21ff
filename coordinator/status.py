"""The one list of task statuses (docs/architecture.md §5), read alike by API, reports, metrics and CLI."""

from __future__ import annotations

from enum import StrEnum


class TaskStatus(StrEnum):
    PREPARING = "preparing"
    """Created, while the kind builds it off the service's loop (reference, first plan): leases and joins are
    answered ``task_preparing`` with a ``retry_after``; it then becomes ``running``, or ``failed`` with why."""
    RUNNING = "running"
    OPTIMAL = "optimal"
    """Gap within the stopping tolerance of a proven optimum."""
    STALLED = "stalled"
    """The stop rule (``reports/stopping.py``): k rounds in a row merged nothing and, with a time limit,
    no merge for a fifth of it or a forecast gain below the tolerance (says nothing about optimality)."""
    DIMINISHING_RETURNS = "diminishing_returns"
    """The task's ``stop_when``: the forecast gain per 1,000 tokens or per agent-second fell below its threshold."""
    BUDGET_EXHAUSTED = "budget_exhausted"
    STOPPED = "stopped"
    FAILED = "failed"


TERMINAL: frozenset[str] = frozenset(
    s.value for s in TaskStatus if s not in (TaskStatus.RUNNING, TaskStatus.PREPARING)
)

EXIT_CODES: dict[TaskStatus, int] = {
    TaskStatus.OPTIMAL: 0,
    TaskStatus.STALLED: 0,
    TaskStatus.DIMINISHING_RETURNS: 0,
    TaskStatus.BUDGET_EXHAUSTED: 0,
    TaskStatus.STOPPED: 3,
    TaskStatus.FAILED: 1,
    TaskStatus.RUNNING: 1,
    TaskStatus.PREPARING: 1,
}
"""``blockopt run`` exit codes (2 is bad input): the run ended as its rules say, or it did not."""
