"""`blockopt run quadratic` end to end as a user runs it: progress, summary, report, picture, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REQUIRED = {
    "task": {"kind", "name", "blocks"},
    "proposals": {"received", "accepted", "rejected"},
    "objective": {"initial", "final", "reference", "reference_kind"},
    "usage": {"tokens", "calls"},
    "constants": {"kappa", "gamma_min", "gamma_max", "delta_max", "rate", "floor", "informative"},
    "checks": {"a_priori", "one_step", "envelope"},
    "forecast": {"limit", "remaining", "eta_rounds", "eta_seconds", "gain_per_1k_tokens"},
}
HISTORY = {
    "round",
    "objective",
    "gap",
    "merged",
    "interfering",
    "kappa",
    "gamma",
    "delta",
    "predicted_gap",
    "hit",
    "a_priori_rhs",
    "a_priori_held",
}


def blockopt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "blockopt", *args], capture_output=True, text=True, timeout=300
    )


def test_run_quadratic_converges_and_writes_report_and_plot(tmp_path: Path) -> None:
    report_path = tmp_path / "r.json"
    done = blockopt(
        "run",
        "quadratic",
        "--inproc",
        "--blocks",
        "16",
        "--dim",
        "4",
        "--coupling",
        "0.3",
        "--noise",
        "0",
        "--agents",
        "16",
        "--merge",
        "checked",
        "--max-rounds",
        "500",
        "--seed",
        "7",
        "--report",
        str(report_path),
    )
    assert done.returncode == 0, done.stderr
    assert "round    0" in done.stderr  # progress, one line per round
    assert "optimal after" in done.stdout and "bound held" not in done.stdout
    report = json.loads(report_path.read_text())
    for key in ("agents", "merge_policy", "status", "rounds", "feasible", "wall_s", "history"):
        assert key in report
    for key, fields in REQUIRED.items():
        assert fields <= set(report[key]), key
    assert all(HISTORY <= set(row) for row in report["history"])
    assert report["status"] == "optimal"
    prior = report["checks"]["a_priori"]
    assert prior["rounds_held"] == prior["rounds_checked"] > 0
    assert {"coverage_target", "rounds", "hits", "tightness_median"} <= set(report["checks"]["one_step"])
    assert {
        "window",
        "rounds",
        "hits",
        "tightness_median",
        "eta_rounds_predicted",
        "eta_rounds_actual",
    } <= set(report["checks"]["envelope"])
    o = report["objective"]
    assert (o["final"] - o["reference"]) / abs(o["reference"]) <= 1e-8
    png = tmp_path / "r-convergence.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--coupling", "3"], "coupling"),
        (["--blocks", "x"], "--blocks"),
        (["--blocks", "0"], "blocks"),
        (["--agents", "0"], "--agents"),
        (["--merge", "sometimes"], "--merge"),
        (["--noise", "-1"], "noise"),
        (
            ["--selection", "ucb1"],
            "--selection, --hold, --stall-seconds and --regroup-after need the service path",
        ),
        (["--hold"], "--selection, --hold, --stall-seconds and --regroup-after need the service path"),
        (
            ["--stall-seconds", "5"],
            "--selection, --hold, --stall-seconds and --regroup-after need the service path",
        ),
        (
            ["--regroup-after", "stalled"],
            "--selection, --hold, --stall-seconds and --regroup-after need the service path",
        ),
        (["--selection", "greedy"], "--selection"),
        (["--regroup-after", "never"], "--regroup-after"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(args: list[str], needle: str) -> None:
    done = blockopt("run", "quadratic", "--inproc", *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_regrouping_on_arrival_needs_async_mode() -> None:
    done = blockopt("run", "quadratic", "--regroup-after", "arrival")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "blockopt: error: --regroup-after arrival needs --mode async "
        "(rounds mode regroups after an empty round)"
    )


def test_unknown_kind_is_one_line() -> None:
    done = blockopt("run", "nosuchkind")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_a_team_larger_than_the_blocks_is_told_how_many_work_at_once(tmp_path: Path) -> None:
    """The service path with real agent processes: 4 agents for 2 blocks run to the end (the other two wait
    for a free block), and the run says so in one line at the start."""
    report = tmp_path / "r.json"
    done = blockopt(
        "run", "quadratic", "--blocks", "2", "--dim", "2", "--agents", "4", "--processes", "1",
        "--max-rounds", "30", "--quiet", "--report", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "work at once" in line]
    assert said == [
        "blockopt: 4 agents for 2 blocks: at most 2 work at once (one agent per block); "
        "the other 2 wait for a free block"
    ]
    assert json.loads(report.read_text())["agents"] == 4


def test_a_team_that_fits_is_not_warned() -> None:
    done = blockopt("run", "quadratic", "--inproc", "--blocks", "2", "--agents", "2", "--max-rounds", "3")
    assert done.returncode == 0 and "work at once" not in done.stderr


def test_more_agents_than_robots_names_the_team_default() -> None:
    """Routing's blocks follow the team (one per agent); more agents than robots is refused in one line that
    says the team set the block count."""
    done = blockopt("run", "routing", "--map", "empty-16-16", "--robots", "4", "--agents", "8", "--inproc")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "8 blocks for 4 robots" in lines[0] and "team of 8 agents" in lines[0]
    assert "Traceback" not in done.stderr
