"""SQLite query planning kind (docs/architecture.md §3 "sqlplan"): see ``task.py``; one job per module."""

from __future__ import annotations

from tasks.sqlplan.task import SqlPlanTask

TASK = SqlPlanTask

__all__ = ["TASK", "SqlPlanTask"]
