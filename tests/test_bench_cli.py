"""Bad input to the side-by-side benchmark scripts: one line on stderr and exit code 2, before any run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "want OUT_DIR"),
        (["OUT", "no-such-ref-xyz", "1", "empty-16-16:20"], "no commit 'no-such-ref-xyz'"),
    ],
)
def test_refs_side_by_side_refuses_bad_input(tmp_path: Path, args: list[str], says: str) -> None:
    args = [str(tmp_path / a) if a == "OUT" else a for a in args]
    done = subprocess.run(
        ["sh", str(ROOT / "benchmarks" / "refs_side_by_side.sh"), *args], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not any(tmp_path.glob("OUT/*"))


def test_one_agent_trace_refuses_an_unknown_ref() -> None:
    script = ROOT / "benchmarks" / "routing_one_agent_trace.py"
    done = subprocess.run(
        [sys.executable, str(script), "--refs", "no-such-ref-xyz"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "cannot export no-such-ref-xyz" in done.stderr


def test_one_agent_trace_refuses_an_instance_without_its_robot_count() -> None:
    script = ROOT / "benchmarks" / "routing_one_agent_trace.py"
    done = subprocess.run(
        [sys.executable, str(script), "--only", "room-32-32-4"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "--only wants MAP:K" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_one_agent_trace_refuses_params_that_are_not_a_json_object() -> None:
    script = ROOT / "benchmarks" / "routing_one_agent_trace.py"
    for bad in ("{initial: shortest}", "[1]"):
        done = subprocess.run([sys.executable, str(script), "--params", bad], capture_output=True, text=True)
        assert done.returncode == 2
        assert "--params wants a JSON object" in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--refs", "no-such-ref-xyz"], "cannot export no-such-ref-xyz"),
        (["--only", "warehouse-10-20-10-2-1"], "--only wants MAP:K"),
        (["--only", "empty-16-16:many"], "--only wants MAP:K"),
        (["--ops", "0"], "want a positive count"),
    ],
)
def test_index_speed_refuses_bad_input(args: list[str], says: str) -> None:
    script = ROOT / "benchmarks" / "routing_index_speed.py"
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["--agents", "0"], ["--answers", "0"], ["--budget", "-1"]])
def test_commit_cpu_refuses_a_team_size_answer_count_or_budget_that_is_not_positive(args: list[str]) -> None:
    script = ROOT / "benchmarks" / "commit_cpu.py"
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2
    assert "must be positive" in done.stderr and len(done.stderr.strip().splitlines()) == 1
