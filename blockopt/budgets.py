"""A run's budgets from ``blockopt run``'s options: a time limit ends a run, not a count of rounds it never
asked for."""

from __future__ import annotations

DEFAULT_MAX_ROUNDS = 500
"""Rounds of a run given neither ``--max-rounds`` nor ``--time-limit``."""


def rounds_budget(max_rounds: int | None, time_limit: float | None) -> int | None:
    """The rounds asked for, else ``DEFAULT_MAX_ROUNDS`` only when no time limit ends the run (None: no
    rounds budget). One routing agent closes a round at each search: 500 rounds ended its 120 s runs at
    66-113 s (docs/notes/2026-12-06-the-late-phase.md)."""
    if max_rounds is not None:
        return max_rounds
    return DEFAULT_MAX_ROUNDS if time_limit is None else None


def run_budgets(max_rounds: int | None, time_limit: float | None) -> dict[str, int | float]:
    """The task's ``budgets`` as the service takes them."""
    rounds = rounds_budget(max_rounds, time_limit)
    budgets: dict[str, int | float] = {} if rounds is None else {"rounds": rounds}
    if time_limit is not None:
        budgets["seconds"] = time_limit
    return budgets
