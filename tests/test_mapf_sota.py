"""benchmarks/mapf_sota.py without the external solvers: skips say why, parsed plans go through our validator."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from benchmarks import mapf_sota
from benchmarks.lib.routing import make_task


def test_missing_source_tree_is_skipped_with_the_reason(tmp_path: Path) -> None:
    s = mapf_sota.build("lns2", str(tmp_path / "nowhere"), "lns", "lns")
    assert s.binary is None and s.skipped is not None and "no CMakeLists.txt" in s.skipped
    s = mapf_sota.build("lacam3", None, "main", "main")
    assert s.skipped == "no --lacam3-src given"


def test_a_tree_inside_the_repository_is_refused() -> None:
    repo = Path(mapf_sota.__file__).resolve().parent.parent
    s = mapf_sota.build("lns2", str(repo / "benchmarks"), "lns", "lns")
    assert s.binary is None and s.skipped is not None and "inside this repository" in s.skipped


def test_failed_build_is_skipped_with_the_reason(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("BLOCKOPT_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "broken"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("this is not cmake (\n")
    s = mapf_sota.build("lns2", str(src), "lns", "lns")
    assert s.binary is None and s.skipped is not None
    assert ("failed" in s.skipped) if shutil.which("cmake") else (s.skipped == "cmake not found")


def test_parsed_plans_are_judged_by_our_validator() -> None:
    task = make_task("empty-8-8", "empty-8-8-random-1", 2, 1)
    (sx, sy), (gx, gy) = task.grid.xy(task.inst.starts[0]), task.grid.xy(task.inst.goals[0])
    a = [task.grid.xy(c) for c in task.grid.shortest_path(task.inst.starts[0], task.inst.goals[0])]
    b = [task.grid.xy(c) for c in task.grid.shortest_path(task.inst.starts[1], task.inst.goals[1])]
    # LNS2 writes (row, col); LaCAM3 writes one configuration (x, y) per time step
    lns2 = "".join(f"Agent {i}:" + "".join(f"({y},{x})->" for x, y in p) + "\n" for i, p in enumerate((a, b)))
    assert mapf_sota._paths_lns2(lns2) == [a, b]
    horizon = max(len(a), len(b))
    steps = [[(p[min(t, len(p) - 1)]) for p in (a, b)] for t in range(horizon)]
    lacam = "agents=2\ncomp_time_initial_solution=3\nsolution=\n" + "".join(
        f"{t}:" + "".join(f"({x},{y})," for x, y in conf) + "\n" for t, conf in enumerate(steps)
    )
    parsed = mapf_sota._paths_lacam3(lacam)
    assert [p[: len(q)] for p, q in zip(parsed, (a, b))] == [a, b]
    good = mapf_sota._row(task, "lns2", {"paths": [a, b], "seconds": 1.0})
    assert good["valid"] == mapf_sota.check(task, [a, b]).valid
    # both robots sent along robot 0's path: a vertex conflict at t=0 at least, so invalid
    bad = mapf_sota._row(task, "lns2", {"paths": [a, list(a)], "seconds": 1.0})
    assert bad["valid"] is False
    short = mapf_sota._row(task, "lns2", {"paths": [a], "seconds": 1.0})
    assert short["valid"] is False and "1 paths for 2 robots" in short["error"]
    assert (sx, sy) == a[0] and (gx, gy) == a[-1]


def test_two_unversioned_trees_do_not_share_a_cached_build(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Exported trees without a COMMIT marker are told apart by content, so a stale binary is never reused.

    A stand-in ``cmake`` on PATH "builds" a binary holding its source tree's CMakeLists.txt; the second
    tree must get its own build, not the first tree's cached binary (which the key "unversioned" gave it).
    """
    monkeypatch.setenv("BLOCKOPT_CACHE", str(tmp_path / "cache"))
    tools = tmp_path / "bin"
    tools.mkdir()
    cmake = tools / "cmake"
    cmake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-S" ]; then cp "$2/CMakeLists.txt" "$4/source.txt"; exit 0; fi\n'
        'cp "$2/source.txt" "$2/lns"\n'
    )
    cmake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    built: list[Path] = []
    for n, body in enumerate(("one", "two")):
        tree = tmp_path / f"tree{n}"
        tree.mkdir()
        (tree / "CMakeLists.txt").write_text(body)
        solver = mapf_sota.build("lns2", str(tree), "lns", "lns")
        assert solver.binary is not None, solver.skipped
        built.append(solver.binary)
    assert built[0] != built[1]
    assert [p.read_text() for p in built] == ["one", "two"]
