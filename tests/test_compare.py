"""`blockopt compare REPORT.json ...`: speed-ups of real runs at a target; bad input: one line, exit 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_cli import blockopt


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two real in-process runs of one quadratic task: one agent, then four."""
    out = []
    for agents in (1, 4):
        path = tmp_path_factory.mktemp("runs") / f"a{agents}.json"
        done = blockopt(
            "run", "quadratic", "--inproc", "--blocks", "4", "--dim", "3", "--coupling", "0.3",
            "--agents", str(agents), "--max-rounds", "60", "--seed", "3", "--quiet", "--report", str(path),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        out.append(path)
    return out


def test_report_rows_carry_time_and_agent_seconds(reports: list[Path]) -> None:
    data = json.loads(reports[0].read_text())
    ts = [row["t"] for row in data["history"]]
    assert all(t is not None for t in ts) and ts == sorted(ts)
    assert all(row["agent_seconds"] is not None for row in data["history"])
    anytime = data["anytime"]
    assert anytime["timed"] and anytime["points"][-1][1] == data["objective"]["final"]
    assert 0 <= anytime["primal_integral_normalized"] <= 1


def test_compare_prints_speed_ups_against_the_first_report(reports: list[Path]) -> None:
    done = blockopt("compare", *map(str, reports), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    first = json.loads(reports[0].read_text())
    assert result["target"] == first["objective"]["final"]
    ref, other = result["runs"]
    assert ref["speed_up"] == 1.0 and ref["time_to_target"] is not None
    if other["time_to_target"] is not None:
        assert other["speed_up"] == pytest.approx(ref["time_to_target"] / other["time_to_target"])
    table = blockopt("compare", *map(str, reports))
    assert table.returncode == 0 and "speed-up S = T_ref(Q) / T(Q)" in table.stdout
    assert len(table.stdout.strip().splitlines()) == 2 + len(reports)


def test_a_target_nobody_reached_has_no_speed_up(reports: list[Path]) -> None:
    done = blockopt("compare", *map(str, reports), "--json", "--target=-1e12")
    result = json.loads(done.stdout)
    assert all(r["time_to_target"] is None and r["speed_up"] is None for r in result["runs"])


def _untimed(report: Path, tmp_path: Path) -> Path:
    data = json.loads(report.read_text())
    data.pop("anytime")
    for row in data["history"]:
        row.pop("t")
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda tmp, _: tmp / "missing.json", "no such file"),
        (lambda tmp, _: (tmp / "x.json").write_text("{not json") and tmp / "x.json", "not a JSON report"),
        (lambda tmp, _: (tmp / "y.json").write_text('{"a": 1}') and tmp / "y.json", "not a blockopt report"),
        (lambda tmp, r: _untimed(r, tmp), "no time data"),
    ],
)
def test_bad_reports_give_one_line_and_exit_2(
    reports: list[Path], tmp_path: Path, make: Callable[[Path, Path], Path], needle: str
) -> None:
    bad = make(tmp_path, reports[0])
    done = blockopt("compare", str(reports[0]), str(bad))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and str(bad) in lines[0], done.stderr


def test_the_convergence_picture_can_show_seconds(reports: list[Path], tmp_path: Path) -> None:
    from coordinator.reports.ledger import Report
    from coordinator.reports.plots import convergence_plot

    report = Report.model_validate_json(reports[0].read_text())
    out = convergence_plot(report, str(tmp_path / "s.png"), "seconds")
    assert Path(out).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    untimed = report.model_copy(update={"anytime": None})  # an older report: a picture that says so
    assert Path(convergence_plot(untimed, str(tmp_path / "u.png"), "seconds")).stat().st_size > 0


def test_run_reports_the_time_to_user_targets(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    done = blockopt(
        "run", "quadratic", "--inproc", "--blocks", "2", "--dim", "2", "--max-rounds", "10", "--quiet",
        "--target", "1e12", "--target=-1e12", "--report", str(path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(path.read_text())["anytime"]["time_to_target"]
    user = {row["objective"]: row["seconds"] for row in rows if row["relative_gap"] is None}
    assert user == {1e12: 0.0, -1e12: None}  # the first plan is below one, nothing reaches the other
    assert "  anytime: primal integral / T" in done.stdout
