"""A run's budgets: a time limit ends a run, not a count of rounds nobody asked for."""

from __future__ import annotations

from blockopt.budgets import DEFAULT_MAX_ROUNDS, rounds_budget, run_budgets


def test_a_run_with_a_time_limit_has_no_rounds_budget_unless_asked() -> None:
    """One routing agent closes a round at each search: the 500 rounds of the old default ended its 120 s
    runs at 66-113 s."""
    assert run_budgets(None, 120.0) == {"seconds": 120.0}
    assert rounds_budget(None, 120.0) is None
    assert run_budgets(30, 120.0) == {"rounds": 30, "seconds": 120.0}


def test_a_run_without_a_time_limit_keeps_the_default_rounds() -> None:
    assert run_budgets(None, None) == {"rounds": DEFAULT_MAX_ROUNDS} == {"rounds": 500}
    assert rounds_budget(7, None) == 7
