"""The benchmark scripts' command line: each runs as ``python -m benchmarks.NAME`` from the repository root,
and bad input gets one line on stderr and exit code 2, before any run (nothing written)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem != "__init__" and not p.stem.startswith("_")
)


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def one_line_refusal(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_benchmarks_stay_few_and_import_only_what_ships() -> None:
    """At most 15 scripts (helpers live in benchmarks/lib), none patching sys.path or importing tests."""
    assert len(SCRIPTS) <= 15, SCRIPTS
    for path in [*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "benchmarks" / "lib").glob("*.py")]:
        text = path.read_text()
        assert "sys.path.insert" not in text and "sys.path[" not in text, path
        assert "from tests" not in text and "import tests" not in text, path


@pytest.mark.parametrize("script", SCRIPTS)
def test_an_unknown_option_is_one_line_and_exit_2(script: str) -> None:
    one_line_refusal(bench(f"benchmarks.{script}", "--no-such-option"), f"{script}: ")


def test_the_one_line_rule_fails_on_argparse_usage_output() -> None:
    """The check above can fail: plain argparse prints its usage first, two lines."""
    code = "import argparse; argparse.ArgumentParser(prog='x').parse_args(['--no-such-option'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    with pytest.raises(AssertionError):
        one_line_refusal(done, "x: ")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--refs", "HEAD", "--only", "empty-16-16:20"], "--seeds and --refs want --dir"),
        (
            ["--refs", "no-such-ref-xyz", "--dir", "OUT", "--only", "empty-16-16:20"],
            "cannot export no-such-ref-xyz",
        ),
        (["--seeds", "0", "--dir", "OUT", "--only", "room-32-32-4"], "--only wants MAP:K"),
        (["--dir", "OUT"], "--dir goes with --seeds or --refs"),
    ],
)
def test_mapf_sota_side_by_side_refuses_bad_input(tmp_path: Path, args: list[str], says: str) -> None:
    args = [str(tmp_path / a) if a == "OUT" else a for a in args]
    one_line_refusal(bench("benchmarks.mapf_sota", *args), says)
    assert not any(tmp_path.glob("OUT/*"))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["trace", "--refs", "no-such-ref-xyz"], "cannot export no-such-ref-xyz"),
        (["trace", "--only", "room-32-32-4"], "--only wants MAP:K"),
        (["trace", "--params", "{initial: shortest}"], "--params wants a JSON object"),
        (["trace", "--params", "[1]"], "--params wants a JSON object"),
        (["index", "--refs", "no-such-ref-xyz"], "cannot export no-such-ref-xyz"),
        (["index", "--only", "warehouse-10-20-10-2-1"], "--only wants MAP:K"),
        (["index", "--only", "empty-16-16:many"], "--only wants MAP:K"),
        (["index", "--ops", "0"], "want a positive count"),
        (["sipp", "--calls", "0"], "want a positive count"),
        (["contract", "--steps", "0"], "want a positive count"),
        (["contract", "--changed", "-1"], "--changed wants 0 or more paths"),
        (["contract", "--refs", "no-such-ref-xyz"], "cannot export no-such-ref-xyz"),
        (["first-plan", "--starts", "sideways"], "invalid choice"),
    ],
)
def test_routing_refuses_bad_input(args: list[str], says: str) -> None:
    one_line_refusal(bench("benchmarks.routing", *args), says)


@pytest.mark.parametrize(
    ("script", "args", "says"),
    [
        ("benchmarks.engine", ["round-steps", "--repeats", "0"], "want a positive count"),
        ("benchmarks.engine", ["commit-cpu", "--agents", "0"], "must be positive"),
        ("benchmarks.engine", ["commit-cpu", "--budget", "-1"], "must be positive"),
        (
            "benchmarks.stores",
            ["leases", "--ref", "no-such-ref-xyz", "--out", "OUT/x.json"],
            "no-such-ref-xyz",
        ),
        ("benchmarks.sqlplan", ["team"], "--out is required"),
        ("benchmarks.sqlplan", ["scale", "--scale", "0", "--out", "OUT/x.json"], "positive scale factor"),
    ],
)
def test_merged_scripts_refuse_bad_input(tmp_path: Path, script: str, args: list[str], says: str) -> None:
    args = [str(tmp_path / a[4:]) if a.startswith("OUT/") else a for a in args]
    one_line_refusal(bench(script, *args), says)
    assert not any(tmp_path.iterdir())


def test_routing_contract_rows_per_ref_and_a_checksum_that_repeats(tmp_path: Path) -> None:
    """Two refs side by side: one row each; one tree run twice writes the same contracts (the checksum that
    tells two trees' contracts apart is only worth reading if it does)."""
    import json

    out = tmp_path / "contract.json"
    done = bench(
        "benchmarks.routing", "contract", "--refs", "HEAD", "HEAD", "--only", "empty-16-16:20",
        "--steps", "5", "--changed", "3", "--robots", "4", "--repeats", "1", "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["ref"] for r in rows] == ["HEAD", "HEAD"]
    assert rows[0]["crc32"] == rows[1]["crc32"] and rows[0]["ms_whole"] > 0
