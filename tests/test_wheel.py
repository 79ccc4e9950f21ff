"""blockopt's wheel is enough for a plugin author: job-shop's contract tests pass against it, off the tree.

The slow test builds the wheel from a copy of the source packages, installs it with its ``dev`` extra into a
fresh virtual environment, installs ``examples/jobshop`` from the same copy (not editable), and runs the
plugin's contract test (the repository's file) from an empty directory. A probe plugin records, inside that
pytest session, that ``tests`` cannot be imported and where blockopt and the plugin were imported from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("blockopt", "coordinator", "agents", "tasks")
"""The packages pyproject.toml ships."""
MUST_SHIP = ("blockopt/testing/__init__.py", "blockopt/testing/tasks.py", "blockopt/testing/stores.py")
"""What a plugin's tests import (named, so that the check does not rest on the tree alone)."""

PROBE = """
import importlib.util, json, sys

def pytest_collection_finish(session):
    import blockopt, blockopt_jobshop
    out = {
        "tests_importable": importlib.util.find_spec("tests") is not None,
        "blockopt": blockopt.__file__,
        "blockopt_jobshop": blockopt_jobshop.__file__,
        "sys_path": sys.path,
    }
    with open("probe.json", "w") as f:
        json.dump(out, f)
"""


def source_files(root: Path) -> set[str]:
    """Every file of the shipped packages under ``root`` (modules and package data), as wheel paths."""
    return {
        path.relative_to(root).as_posix()
        for pkg in PACKAGES
        for path in (root / pkg).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def missing_from_wheel(wheel: Path, root: Path = ROOT) -> list[str]:
    """Files the wheel should hold and does not: the named ones and every file of the source packages."""
    with zipfile.ZipFile(wheel) as archive:
        held = set(archive.namelist())
    return sorted((source_files(root) | set(MUST_SHIP)) - held)


def _run(cmd: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def _copy_tree(dest: Path) -> Path:
    """The files a build reads, copied: an in-tree build would reuse a stale ``build/`` folder."""
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    for name in (*PACKAGES, "examples/jobshop"):
        shutil.copytree(ROOT / name, dest / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.mark.slow
def test_jobshop_contract_passes_against_the_installed_wheel(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path / "tree")
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(tree)], tmp_path)
    (wheel,) = dist.glob("blockopt-*.whl")
    assert missing_from_wheel(wheel) == []

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    _run([python, "-m", "pip", "install", "-q", f"{wheel}[dev]", str(tree / "examples/jobshop")], tmp_path)

    work = tmp_path / "work"  # an empty directory: nothing of the repository beside it
    work.mkdir()
    (work / "wheelprobe.py").write_text(PROBE)
    test_file = ROOT / "examples/jobshop/tests/test_contract.py"  # beside the repository's own tests/
    done = _run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "wheelprobe", str(test_file)], work
    )
    assert " passed" in done.stdout and "failed" not in done.stdout

    probe = json.loads((work / "probe.json").read_text())
    site = str(env_dir)
    assert probe["tests_importable"] is False  # the repository's tests/ is nowhere on the path
    assert probe["blockopt"].startswith(site) and probe["blockopt_jobshop"].startswith(site)
    assert not {str(ROOT), str(tree)} & {str(Path(p).resolve()) for p in probe["sys_path"] if p}


# -- the wheel check fails on a wheel that lacks what ships -----------------------------------------


def _wheel(path: Path, names: set[str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name in sorted(names):
            archive.writestr(name, "")
    return path


def test_a_wheel_without_the_contract_suite_is_found(tmp_path: Path) -> None:
    everything = source_files(ROOT) | set(MUST_SHIP)
    assert "blockopt/testing/tasks.py" in everything
    assert missing_from_wheel(_wheel(tmp_path / "full.whl", everything)) == []
    lacking = {name for name in everything if not name.startswith("blockopt/testing/")}
    assert missing_from_wheel(_wheel(tmp_path / "lacking.whl", lacking)) == sorted(
        name for name in everything if name.startswith("blockopt/testing/")
    )


def test_a_wheel_without_package_data_is_found(tmp_path: Path) -> None:
    everything = source_files(ROOT)
    data = {name for name in everything if name.startswith("tasks/data/") or not name.endswith(".py")}
    assert any(name.startswith("tasks/data/mapf/maps/") for name in data)  # the maps are among those checked
    assert missing_from_wheel(_wheel(tmp_path / "code-only.whl", everything - data)) == sorted(data)
