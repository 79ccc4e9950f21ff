"""The default stop rule weighs time and forecast: with a time limit, empty rounds alone never end a task as
``stalled``; without one, the count of empty rounds does (``coordinator/reports/stopping.py``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coordinator.reports.stopping import StopRule, expected_gain, stall_met
from tests.conftest import Coordinator
from tests.test_service_api import _idle_rounds

seconds = st.floats(0.0, 1e4, allow_nan=False)


def test_without_a_time_limit_the_count_of_empty_rounds_decides() -> None:
    rule = StopRule(stall_rounds=3)
    assert not stall_met(rule, 2, quiet_seconds=1e6, elapsed=1e6)
    assert stall_met(rule, 3, quiet_seconds=0.0, elapsed=0.1)


@given(st.integers(0, 100), seconds, st.floats(1.0, 1e4))
def test_with_a_time_limit_a_stall_needs_a_share_of_it_without_a_merge(
    rounds: int, quiet: float, limit: float
) -> None:
    rule = StopRule(stall_rounds=3, time_limit=limit)
    met = stall_met(rule, rounds, quiet, elapsed=quiet)  # no improvements: no forecast
    assert met == (rounds >= 3 and quiet >= 0.2 * limit)


def test_three_quick_empty_rounds_do_not_end_a_60_second_run() -> None:
    """The case of the issue: 3 s into a 60 s limit, after a merge at 2 s."""
    rule = StopRule(stall_rounds=3, time_limit=60.0)
    recent = [(0.5, 1130.0), (2.0, 1118.0)]
    assert not stall_met(rule, 9, quiet_seconds=1.0, elapsed=3.0, recent=recent)
    assert stall_met(StopRule(stall_rounds=3), 9, quiet_seconds=1.0, elapsed=3.0, recent=recent)  # old rule


def test_explicit_stall_seconds_wins_over_the_share_of_the_limit() -> None:
    rule = StopRule(stall_rounds=3, stall_seconds=5.0, time_limit=600.0)
    assert stall_met(rule, 3, quiet_seconds=5.0, elapsed=50.0)
    assert not stall_met(rule, 3, quiet_seconds=4.9, elapsed=50.0)


def test_a_forecast_gain_below_tolerance_ends_the_run_early() -> None:
    """Improvements of 1e-12 over 10 s: over the 80 s left, far below a tolerance of 1e-6."""
    rule = StopRule(stall_rounds=3, time_limit=100.0)
    tiny = [(5.0, 1.0), (10.0, 1.0 - 1e-12)]
    assert stall_met(rule, 3, quiet_seconds=10.0, elapsed=20.0, recent=tiny, tolerance=1e-6)
    large = [(5.0, 2.0), (10.0, 1.0)]
    assert not stall_met(rule, 3, quiet_seconds=10.0, elapsed=20.0, recent=large, tolerance=1e-6)


@given(seconds, seconds, st.floats(0.0, 1e3), seconds)
def test_expected_gain_is_the_rate_since_the_first_point_times_the_time_left(
    t0: float, dt: float, drop: float, left: float
) -> None:
    now = t0 + dt + 1.0
    gain = expected_gain([(t0, 10.0 + drop), (t0 + dt, 10.0)], now, left)
    assert gain is not None and abs(gain - drop / (now - t0) * left) <= 1e-9 * max(1.0, gain)
    assert expected_gain([(t0, 10.0)], now, left) is None


def test_a_service_task_with_a_time_limit_runs_past_its_empty_rounds(coordinator: Coordinator) -> None:
    """Agents that find nothing close empty rounds quickly; with a 10 s limit the task still waits for 2 s
    without a merge (a fifth of it) before it ends as stalled. Without a limit it ends after 3 rounds
    (``test_agents_that_find_nothing_close_empty_rounds_until_the_task_converges``)."""
    task = coordinator.create_task(params={"blocks": 2, "dim": 2}, budgets={"seconds": 10.0})
    _idle_rounds(coordinator, task, 10_000)
    view = coordinator.wait_for(task["id"], lambda v: v["status"] != "running", timeout=30)
    assert view["status"] == "stalled" and "no merge for" in view["reason"]
    rows = coordinator.admin.get(f"/v1/tasks/{task['id']}/rounds").json()["rounds"]
    assert len(rows) > 3 and rows[-1]["t"] >= 2.0
