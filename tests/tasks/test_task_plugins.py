"""Kinds come from the ``blockopt.tasks`` entry points: a broken or clashing plugin is named and left out,
and the other kinds keep working (in process and through the command line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from coordinator.runtime.metrics import REASONS, TaskSample, TaskStateCollector
from tasks import registry
from tasks.registry import KindRefused, UnknownKind, broken_kinds, kind_class, kinds

BLOCKOPT = str(Path(sys.executable).with_name("blockopt"))


def write_plugin_site(root: Path) -> Path:
    """A directory that, on sys.path, holds two installed distributions with blockopt.tasks entry points:
    one whose module fails to import and one whose kind has a parameter named like a runner option."""
    site = root / "site"
    site.mkdir()
    (site / "broken_plugin_mod.py").write_text("import numpyy  # a typo in the plugin\n")
    (site / "clash_plugin_mod.py").write_text(
        textwrap.dedent("""
        from pydantic import BaseModel
        from tasks.quadratic import QuadraticTask, QuadraticParams

        class ClashParams(QuadraticParams):
            agents: int = 3

        class ClashTask(QuadraticTask):
            kind = "clash"
            Params = ClashParams
    """)
    )
    for dist, entry in (
        ("broken_plugin", "broken = broken_plugin_mod:BrokenTask"),
        ("clash_plugin", "clash = clash_plugin_mod:ClashTask"),
    ):
        info = site / f"{dist}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: 0.1\n"
        )
        (info / "entry_points.txt").write_text(f"[blockopt.tasks]\n{entry}\n")
    return site


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = write_plugin_site(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    yield site
    monkeypatch.undo()
    registry.refresh()


def test_built_in_kinds_are_entry_points_too() -> None:
    sources = {s.kind: s for s in registry.kind_sources()}
    assert (
        sources["quadratic"].package == "blockopt"
        and sources["quadratic"].target == "tasks.quadratic:QuadraticTask"
    )
    assert sources["jobshop"].package == "blockopt-jobshop"


def test_a_broken_plugin_is_named_and_the_other_kinds_still_load(plugin_site: Path) -> None:
    broken = {s.kind: s for s in broken_kinds()}
    assert broken["broken"].package == "broken-plugin"
    assert broken["broken"].error == "ModuleNotFoundError: No module named 'numpyy'"
    assert {"quadratic", "routing", "sqlplan", "jobshop"} <= set(kinds())
    with pytest.raises(UnknownKind, match=r"task kind 'broken' \(package broken-plugin\) failed to load"):
        kind_class("broken")


def test_an_agent_process_loads_only_its_tasks_kind() -> None:
    """A worker joins one task: it builds that kind alone, and its command line needs no kind at all
    (importing every installed kind cost each agent process ~1 s of CPU while the team started)."""
    probe = textwrap.dedent("""
        import sys
        from blockopt.cli import build_parser
        from tasks.registry import kind_class
        build_parser(with_kinds=False).parse_args(["fleet", "--coordinator", "http://x", "--task", "t"])
        assert not any(m.startswith(("tasks.quadratic", "tasks.sqlplan")) for m in sys.modules), "cli"
        assert kind_class("quadratic").kind == "quadratic"
        print(sorted(m for m in sys.modules if m in ("tasks.quadratic", "tasks.routing", "tasks.sqlplan")))
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["['tasks.quadratic']"]


def test_a_parameter_named_like_a_runner_option_is_refused_at_registration(plugin_site: Path) -> None:
    clash = {s.kind: s for s in broken_kinds()}["clash"]
    assert clash.package == "clash-plugin"
    assert clash.error == (
        "KindRefused: ClashTask.Params field 'agents' collides with the runner option --agents; rename it"
    )
    assert "clash" not in kinds()


def test_a_field_in_both_models_is_refused() -> None:
    from tasks.quadratic import QuadraticProposerParams, QuadraticTask

    class Knobs(QuadraticProposerParams):
        dim: int = 2

    class Twice(QuadraticTask):
        kind = "twice"
        ProposerParams = Knobs

    with pytest.raises(KindRefused, match="'dim' is a field of both Params and ProposerParams"):
        registry.check_kind("twice", Twice)


def test_the_command_line_lists_kinds_and_survives_a_broken_plugin(tmp_path: Path) -> None:
    site = write_plugin_site(tmp_path)
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    listed = subprocess.run([BLOCKOPT, "kinds"], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "blockopt-jobshop 0.1.0" in lines["jobshop"]
    assert "broken-plugin 0.1" in lines["broken"] and "BROKEN: ModuleNotFoundError" in lines["broken"]
    run = subprocess.run(
        [
            BLOCKOPT,
            "run",
            "quadratic",
            "--inproc",
            "--agents",
            "2",
            "--blocks",
            "2",
            "--dim",
            "2",
            "--max-rounds",
            "3",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if line.startswith("blockopt: warning")]
    assert warnings == [
        "blockopt: warning: task kind 'broken' from package broken-plugin not loaded: "
        "ModuleNotFoundError: No module named 'numpyy'",
        "blockopt: warning: task kind 'clash' from package clash-plugin not loaded: "
        "KindRefused: ClashTask.Params "
        "field 'agents' collides with the runner option --agents; rename it",
    ]


def test_every_declared_rejection_code_is_its_own_metrics_label() -> None:
    assert "not_equivalent" in REASONS
    for cls in kinds().values():
        assert cls.rejection_codes <= REASONS
    collector = TaskStateCollector()
    collector.snapshot.tasks = [
        TaskSample(
            "t-1",
            "sqlplan",
            "running",
            "rounds",
            {"rejected:not_equivalent": 2.0, "rejected:made_up": 1.0},
            0.0,
            0.0,
            None,
            None,
            None,
            0,
        )
    ]
    family = next(m for m in collector.collect() if m.name == "blockopt_proposals_rejected")
    by_reason = {s.labels["reason"]: s.value for s in family.samples}
    assert by_reason == {"not_equivalent": 2.0, "other": 1.0}


def test_a_preset_and_the_team_defaults_come_from_the_kind(tmp_path: Path) -> None:
    """quadratic's preset "theory" sets 16 blocks; routing's team default gives one block per agent (one
    more in async mode)."""
    report = tmp_path / "q.json"
    run = subprocess.run(
        [
            BLOCKOPT,
            "run",
            "quadratic",
            "--preset",
            "theory",
            "--dim",
            "2",
            "--inproc",
            "--max-rounds",
            "2",
            "--quiet",
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode in (0, 1), run.stderr
    assert json.loads(report.read_text())["task"]["name"] == "quadratic-n16-d2-c0.3-s7"
    bad = subprocess.run(
        [BLOCKOPT, "run", "quadratic", "--preset", "nope"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "invalid choice: 'nope'" in bad.stderr
    assert kind_class("routing").team_defaults(5) == {"blocks": 5}
    team = kind_class("routing").team_defaults(2, "async")
    assert team == {"blocks": 3, "stop_after": 300}  # a spare block to regroup with; longer searches
    assert kind_class("routing").team_defaults(1, "async") == {"blocks": 1}  # one agent sees every robot
    assert kind_class("quadratic").team_defaults(5) == {}
