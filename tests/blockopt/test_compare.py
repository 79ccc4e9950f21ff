"""`blockopt compare REPORT.json ...`: speed-ups of real runs at a target; bad input: one line, exit 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.blockopt.test_cli import blockopt


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


def _rescaled(report: Path, out: Path, agents: int, slower: float) -> Path:
    """``report`` as a run of ``agents`` that took ``slower`` times as long to every point."""
    data = json.loads(report.read_text())
    data["agents"] = agents
    data["anytime"]["points"] = [[t * slower, f] for t, f in data["anytime"]["points"]]
    data["wall_s"] = data["wall_s"] * slower
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize(("goal", "verdict"), [(2.0, "above"), (20.0, "below"), (10.0, "undecided")])
def test_compare_reads_samples_of_runs_against_a_goal(
    reports: list[Path], tmp_path: Path, goal: float, verdict: str
) -> None:
    """Three one-agent runs ten times slower than three four-agent runs: S = 10 in every pairing, which
    three runs a side can call above 2 and below 20 (exact p = 1/20 each), and neither at 10, where the
    pairings split."""
    one = [_rescaled(reports[0], tmp_path / f"one-{i}.json", 1, 10.0 + 0.1 * i) for i in range(3)]
    four = [_rescaled(reports[0], tmp_path / f"four-{i}.json", 4, 1.0 + 0.01 * i) for i in range(3)]
    done = blockopt("compare", *map(str, one + four), "--goal", str(goal), "--json")
    assert done.returncode == 0, done.stderr
    (read,) = json.loads(done.stdout)["samples"]
    assert (read["agents"], read["runs"], read["reference_runs"]) == (4, 3, 3)
    assert read["verdict"] == verdict, read
    text = blockopt("compare", *map(str, one + four), "--goal", str(goal))
    assert f"4 agents (3 runs) against 1 (3 runs): S >= {goal:g} in" in text.stdout


def test_a_goal_that_is_not_a_speed_up_is_refused(reports: list[Path]) -> None:
    done = blockopt("compare", *map(str, reports), "--goal", "0")
    assert (
        done.returncode == 2
        and done.stderr.strip() == "blockopt: error: --goal must be a positive speed-up, not 0"
    )


def test_compare_reads_the_pace_of_each_team_size_along_the_run(reports: list[Path], tmp_path: Path) -> None:
    """Three one-agent runs 10, 10.1 and 10.2 times slower than two four-agent runs: at the four-agent
    runs' last improvement, one agent held their objective 10.1 times later (the median): x10.1."""
    one = [_rescaled(reports[0], tmp_path / f"one-{i}.json", 1, 10.0 + 0.1 * i) for i in range(3)]
    four = [_rescaled(reports[0], tmp_path / f"four-{i}.json", 4, 1.0) for i in range(2)]
    last = json.loads(four[0].read_text())["anytime"]["points"][-1][0]
    assert last > 0
    done = blockopt("compare", *map(str, one + four), "--at", str(last), "--json")
    assert done.returncode == 0, done.stderr
    (read,) = json.loads(done.stdout)["pace"]
    assert (read["agents"], read["runs"], read["bound"]) == (4, 2, [False])
    assert read["reference_seconds"][0] == pytest.approx(10.1 * last)
    text = blockopt("compare", *map(str, one + four), "--at", str(last)).stdout
    assert "4 agents (2 runs), the reference's time to their objective at" in text and "(x10.1)" in text


def test_a_run_whose_last_merge_is_timed_after_its_wall_time_ran_until_that_merge(
    reports: list[Path], tmp_path: Path
) -> None:
    """Rows are timed from the task's creation and ``wall_s`` from the ledger's start, so a quick run's last
    merge can be timed after its wall_s: its pace at that merge is known, not a bound (it failed in CI)."""
    one = [_rescaled(reports[0], tmp_path / f"one-{i}.json", 1, 10.0) for i in range(3)]
    four = _rescaled(reports[0], tmp_path / "four.json", 4, 1.0)
    data = json.loads(four.read_text())
    last = data["anytime"]["points"][-1][0]
    data["wall_s"] = last / 2
    four.write_text(json.dumps(data))
    done = blockopt("compare", *map(str, [*one, four]), "--at", str(last), "--json")
    (read,) = json.loads(done.stdout)["pace"]
    assert read["bound"] == [False] and read["reference_seconds"][0] == pytest.approx(10.0 * last)


def test_marks_that_are_not_positive_seconds_are_refused(reports: list[Path]) -> None:
    done = blockopt("compare", *map(str, reports), "--at", "5", "-1")
    assert (
        done.returncode == 2
        and done.stderr.strip() == "blockopt: error: --at takes positive seconds, not 5 -1"
    )
