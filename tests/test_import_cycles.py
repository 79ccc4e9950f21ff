"""No import circles among the project's modules: the dependency graph of its packages is acyclic.

Every import statement counts, wherever it sits: at module level, inside a function, or under
``if TYPE_CHECKING``. A function-level or type-only import hides a circle from the interpreter, not from a
reader (issue 32's three circles were exactly those); a module that needs its importer's types takes them from
a third module or names a protocol. ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else
to ``a.b``; a package's ``__init__`` is a module like any other (importing ``a.b.c`` is not counted as
importing ``a`` and ``a.b``, which would tie every package to its re-exports).

The check runs on the real tree and, to show it can fail, on small trees written here with a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]

SOURCES = {
    ROOT: ("tasks", "coordinator", "agents", "blockopt"),
    ROOT / "examples/jobshop": ("blockopt_jobshop",),
}
"""Import roots and the packages under each: the project's own code (tests and benchmarks aside)."""


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted name -> file, for every module of ``packages`` under ``root``."""
    found: dict[str, Path] = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The project modules one import statement names (relative imports resolved against ``module``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".") if is_package else module.split(".")[:-1]
            pkg = pkg[: len(pkg) - node.level + 1]
            base = ".".join([*pkg, base] if base else pkg)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    return [name for name in names if name in known]


def import_graph(sources: dict[Path, tuple[str, ...]]) -> nx.DiGraph:
    """Modules as nodes, an edge ``a -> b`` where a's file imports b anywhere in it."""
    files: dict[str, Path] = {}
    for root, packages in sources.items():
        files |= _modules(root, packages)
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for module, path in files.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(node, module, path.name == "__init__.py", set(files)):
                    if target != module:
                        graph.add_edge(module, target)
    return graph


def import_cycles(sources: dict[Path, tuple[str, ...]]) -> list[list[str]]:
    """Each group of modules that import each other, directly or through others (sorted: a stable diff)."""
    graph = import_graph(sources)
    return sorted(sorted(group) for group in nx.strongly_connected_components(graph) if len(group) > 1)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# -- the real tree ---------------------------------------------------------------------------


def test_the_project_has_no_import_circle() -> None:
    assert import_cycles(SOURCES) == []


def test_the_graph_sees_the_project() -> None:
    """The check looks at real edges (an empty graph would pass trivially)."""
    graph = import_graph(SOURCES)
    assert graph.has_edge("tasks.routing.task", "tasks.routing.neighbourhoods")
    assert graph.has_edge("blockopt.supervisor", "blockopt.logs")
    assert "blockopt_jobshop" in graph


# -- the check fails on a faulty tree ---------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("from pkg.b import thing\n", "from pkg.a import other\n"),  # module level
        ("from pkg import b\n", "def f() -> None:\n    from . import a\n"),  # relative, inside a function
        (
            "from pkg.b import thing\n",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import Other\n",
        ),  # a type-only import, as tasks/routing/neighbourhoods.py had
        ("import pkg.b\n", "import pkg.c\n"),  # through a third module
    ],
)
def test_a_circle_is_found(tmp_path: Path, a: str, b: str) -> None:
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": a, "pkg/b.py": b, "pkg/c.py": "import pkg.a\n"})
    (cycle,) = import_cycles({tmp_path: ("pkg",)})
    assert {"pkg.a", "pkg.b"} <= set(cycle)


def test_imports_one_way_pass(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import thing\n",  # a package re-exporting its module is no circle
            "pkg/a.py": "from pkg.b import other\nimport json\n",
            "pkg/b.py": "def other() -> None:\n    from pkg import c\n",
            "pkg/c.py": "",
        },
    )
    assert import_cycles({tmp_path: ("pkg",)}) == []
