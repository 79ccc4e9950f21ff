"""The anytime curve: every history row carries its time and agent-seconds (report, API, events, /metrics),
async windows keep one point per merge, and the primal integral and time to targets are what their
formulas say."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.engine.records import MAX_MERGE_POINTS, RoundRecord, keep_point
from coordinator.reports.anytime import (
    anytime_section,
    curve,
    primal_gap,
    primal_integral,
    time_to_target,
)
from coordinator.reports.ledger import RunLedger, build_report
from coordinator.status import TaskStatus
from tasks.base import Reference
from tests.conftest import Coordinator
from tests.coordinator.ui.test_ui_api import events, solve

times = st.floats(0.0, 1e4, allow_nan=False)
objectives = st.floats(-1e6, 1e6, allow_nan=False)
curves = st.lists(st.tuples(times, objectives), min_size=1, max_size=30)


@given(curves, objectives, st.floats(0.0, 1e4, allow_nan=False))
def test_primal_integral_lies_between_zero_and_the_horizon(
    points: list[tuple[float, float]], reference: float, horizon: float
) -> None:
    assert 0.0 <= primal_integral(points, reference, horizon) <= horizon


@given(curves, objectives, st.floats(0.1, 1e4), st.floats(0.0, 1e3))
def test_primal_integral_grows_with_the_horizon(
    points: list[tuple[float, float]], reference: float, horizon: float, more: float
) -> None:
    shorter = primal_integral(points, reference, horizon)
    assert primal_integral(points, reference, horizon + more) >= shorter - 1e-9 * max(1.0, horizon)


@given(curves, st.floats(0.0, 1e6), st.floats(1.0, 1e4), st.floats(0.0, 1.0))
def test_a_curve_that_is_better_everywhere_has_a_smaller_integral(
    points: list[tuple[float, float]], reference: float, horizon: float, shrink: float
) -> None:
    """Above a positive reference, moving every point toward it (a better run) never raises the integral."""
    above = [(t, reference + abs(f)) for t, f in points]
    better = [(t, reference + shrink * abs(f)) for t, f in points]
    assert primal_integral(better, reference, horizon) <= primal_integral(above, reference, horizon) + 1e-9


def test_primal_integral_of_a_known_curve() -> None:
    """Reference 100: nothing until t=2 (p=1), 200 until t=6 (p=1/2), 125 until 10 (p=1/5):
    2 + 4/2 + 4/5 = 4.8, normalized 0.48."""
    points = [(2.0, 200.0), (6.0, 125.0)]
    assert primal_integral(points, 100.0, 10.0) == pytest.approx(4.8)
    assert primal_integral(points + [(10.0, 100.0)], 100.0, 20.0) == pytest.approx(4.8)  # optimal: p = 0
    assert primal_integral(points, 100.0, 1.0) == pytest.approx(1.0)  # before the first solution: p = 1


def test_a_wrong_integral_fails_the_known_case() -> None:
    """The known case can fail: counting the first solution from t=0 (no p=1 before it) gives 4.0, not 4.8."""
    shifted = [(0.0, 200.0), (6.0, 125.0)]
    assert primal_integral(shifted, 100.0, 10.0) == pytest.approx(3 + 0.8)
    assert primal_integral(shifted, 100.0, 10.0) != pytest.approx(4.8)


def test_primal_gap_cases() -> None:
    assert primal_gap(5.0, 5.0) == 0.0 and primal_gap(0.0, 0.0) == 0.0
    assert primal_gap(-1.0, 2.0) == 1.0  # opposite signs
    assert primal_gap(-8.0, -10.0) == pytest.approx(0.2)  # negative optimum (the quadratic's)


def test_time_to_target_is_the_first_time_reached() -> None:
    points = [(0.0, 10.0), (3.0, 7.0), (5.0, 6.0)]
    assert time_to_target(points, 7.0) == 3.0
    assert time_to_target(points, 6.5) == 5.0
    assert time_to_target(points, 5.9) is None


def test_curve_keeps_merges_and_improvements_only() -> None:
    history: list[dict[str, Any]] = [
        {"t": 1.0, "objective": 9.0, "merges": [(0.4, 9.5), (0.9, 9.0)]},
        {"t": 2.0, "objective": 9.0, "merges": None},
        {"t": None, "objective": 1.0},  # no time: adds nothing
    ]
    assert curve(history, 10.0) == [(0.0, 10.0), (0.4, 9.5), (0.9, 9.0)]


def test_keep_point_bounds_a_window() -> None:
    points: list[tuple[float, float]] = []
    for i in range(1000):
        points = keep_point(points, (float(i), -float(i)))
        assert len(points) <= MAX_MERGE_POINTS
    assert points[0] == (0.0, 0.0) and points[-1] == (999.0, -999.0)


def test_anytime_section_targets() -> None:
    section = anytime_section(
        [{"t": 1.0, "objective": 101.0}, {"t": 3.0, "objective": 100.4}], 120.0, 100.0, "lower_bound", 4.0
    )
    by_gap = {row["relative_gap"]: row["seconds"] for row in section["time_to_target"]}
    assert by_gap == {0.01: 1.0, 0.005: 3.0, 0.001: None}
    assert section["timed"] and 0 < section["primal_integral_normalized"] < 1


@pytest.mark.parametrize("mode", ["rounds", "async"])
def test_every_history_row_carries_time_and_agent_seconds(coordinator: Coordinator, mode: str) -> None:
    task = coordinator.create_task(params={"blocks": 4, "dim": 3, "coupling": 0.6}, mode=mode)
    solve(coordinator, task)
    rounds = coordinator.admin.get(f"/v1/tasks/{task['id']}/rounds").json()["rounds"]
    assert rounds and all(r["t"] is not None and r["agent_seconds"] is not None for r in rounds)
    ts = [r["t"] for r in rounds]
    assert ts == sorted(ts) and ts[0] >= 0
    spent = [r["agent_seconds"] for r in rounds]
    assert spent == sorted(spent) and spent[-1] > 0  # workers report the seconds they spend
    streamed = [d for k, d in events(coordinator, task["id"]) if k == "round"]
    assert [d["t"] for d in streamed] == ts
    report = coordinator.admin.get(f"/v1/tasks/{task['id']}/report").json()
    assert [h["t"] for h in report["history"]] == ts
    anytime = report["anytime"]
    assert anytime["timed"] and anytime["points"][0] == [0.0, report["objective"]["initial"]]
    assert anytime["points"][-1][1] == report["objective"]["final"]
    assert 0 <= anytime["primal_integral"] <= anytime["horizon"]
    if mode == "async":  # one point per merge, not one per window
        for r in rounds:  # every merge, up to the bound (then thinned)
            kept = len(r["merges"] or ())
            assert kept == r["merged"] if r["merged"] <= MAX_MERGE_POINTS else kept <= MAX_MERGE_POINTS
        assert any(r["merged"] > 1 for r in rounds)
    metrics = coordinator.admin.get("/metrics").text
    mine = f'{{task="{task["id"]}"}}'
    line = next(x for x in metrics.splitlines() if x.startswith(f"blockopt_task_agent_seconds{mine}"))
    assert float(line.split()[-1]) >= spent[-1] - 1e-6  # (an answer after the end still reports its seconds)
    assert f'blockopt_task_elapsed_seconds{{task="{task["id"]}"}}' in metrics


def _report_of_rows_timed(times: list[float]) -> Any:
    """A report of one-round-a-merge rows at ``times``, built the moment its ledger starts (wall time ~0)."""
    ledger = RunLedger(Reference(0.0, "lower_bound"), 10.0, 1e-9)
    for i, t in enumerate(times):
        row = RoundRecord(
            round=i, version=i + 1, objective=9.0 - i, gap=9.0 - i, proposals=1, accepted=1, interfering=0,
            merge_kind="independent", kappa=0.1, gamma=1.0, delta=1.0, t=t,
        )  # fmt: skip
        ledger.add_round(row, [], [])
    return build_report(
        ledger, task_info={}, agents=1, merge_policy="checked", status=TaskStatus.STALLED,
        final_objective=9.0 - len(times) + 1, feasible=True,
    )  # fmt: skip


def test_a_run_lasts_at_least_until_its_last_timed_row() -> None:
    """A row timed after the ledger's clock (a merge committed as the run ended, or just a finer rounding) is
    inside the run: ``wall_s`` and the anytime horizon reach it, rounded up to the millisecond."""
    report = _report_of_rows_timed([0.0004, 5.0000001])
    assert report.wall_s == 5.001
    assert report.anytime is not None and report.anytime["horizon"] == 5.001
    assert _report_of_rows_timed([0.1234]).wall_s == 0.124
    assert _report_of_rows_timed([]).wall_s < 1.0
