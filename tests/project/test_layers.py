"""The coordinator's folders are its layers: imports point down only, names are unique, no kind is named.

Each check runs on the real tree and, to show it can fail, on a small tree written here with the fault.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

from tasks.registry import kinds

ROOT = Path(__file__).resolve().parents[2]

LAYERS = ("base", "engine", "store", "reports", "runtime", "api")
"""Bottom to top, as coordinator/__init__.py states them: a module imports its own layer and those below."""

PACKAGE_LAYER = {
    "engine": "engine",
    "store": "store",
    "reports": "reports",
    "runtime": "runtime",
    "api": "api",
    "ui": "api",
    "errors": "base",
    "status": "base",
    "settings": "base",
    "json_integers": "base",
    "cancelling": "base",
}
"""coordinator's first-level packages and modules; a new one must be placed here (else the test fails)."""


def layer_of(module: str) -> str:
    """The layer of a dotted module name under ``coordinator`` (KeyError for an unplaced one)."""
    parts = module.split(".")
    return "base" if len(parts) == 1 else PACKAGE_LAYER[parts[1]]


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every ``coordinator`` module a file imports (for ``from coordinator import x``, x too)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                pkg = module.split(".") if is_package else module.split(".")[:-1]
                pkg = pkg[: len(pkg) - node.level + 1]
                base = ".".join([*pkg, base] if base else pkg)
            out.append((node.lineno, base))
            if base == "coordinator":  # `from coordinator import errors`: the module is the name
                out += [(node.lineno, f"coordinator.{a.name}") for a in node.names]
    return [
        (line, name) for line, name in out if name.split(".")[0] == "coordinator" and name != "coordinator"
    ]


def upward_imports(root: Path) -> list[str]:
    """Each import in ``root/coordinator`` of a module from a higher layer, as ``file:line: a -> b``."""
    found: list[str] = []
    for path in sorted((root / "coordinator").rglob("*.py")):
        module = _module_name(path, root)
        mine = LAYERS.index(layer_of(module))
        for line, target in _imported(ast.parse(path.read_text()), module, path.name == "__init__.py"):
            theirs = LAYERS.index(layer_of(target))
            if theirs > mine:
                where = f"{path.relative_to(root)}:{line}"
                found.append(f"{where}: {layer_of(module)} {module} -> {layer_of(target)} {target}")
    return found


def duplicate_public_names(root: Path, packages: tuple[str, ...]) -> dict[str, list[str]]:
    """Public top-level classes and functions defined in more than one module of ``packages``."""
    where: dict[str, list[str]] = defaultdict(list)
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    if not node.name.startswith("_"):
                        where[node.name].append(str(path.relative_to(root)))
    return {name: files for name, files in where.items() if len(files) > 1}


def kind_names_in_code(root: Path, packages: tuple[str, ...], names: list[str]) -> list[str]:
    """Identifiers and strings (docstrings and examples included; comments aside) that name a kind."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE)
    found: list[str] = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*")):
            if path.suffix == ".py":
                for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
                    if tok.type in (tokenize.NAME, tokenize.STRING) and pattern.search(tok.string):
                        found.append(f"{path.relative_to(root)}:{tok.start[0]}: {tok.string[:60]!r}")
            elif path.suffix in (".js", ".html", ".css"):
                for number, line in enumerate(path.read_text().splitlines(), 1):
                    if pattern.search(line):
                        found.append(f"{path.relative_to(root)}:{number}: {line.strip()[:60]!r}")
    return found


MAX_LINES = 400
LONG_MODULE_PACKAGES = ("coordinator", "agents", "tasks", "blockopt", "examples/jobshop/blockopt_jobshop")


def long_modules_without_reason(root: Path, packages: tuple[str, ...] = LONG_MODULE_PACKAGES) -> list[str]:
    """Modules over MAX_LINES whose docstring does not say why they are one job (``One job over 400
    lines: ...``)."""
    found: list[str] = []
    for path in sorted(p for package in packages for p in (root / package).rglob("*.py")):
        text = path.read_text()
        if (
            text.count("\n") > MAX_LINES
            and "one job" not in (ast.get_docstring(ast.parse(text)) or "").lower()
        ):
            found.append(f"{path.relative_to(root)}: {text.count(chr(10))} lines")
    return found


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# -- the real tree ---------------------------------------------------------------------------


def test_imports_point_down_only() -> None:
    assert upward_imports(ROOT) == []


def test_the_layers_are_the_ones_the_package_docstring_states() -> None:
    import coordinator

    doc = coordinator.__doc__ or ""
    stated = [word for word in re.findall(r"^\s{4}(\w+)\s", doc, re.MULTILINE) if word in LAYERS]
    assert stated == list(reversed(LAYERS))


def test_no_two_public_classes_or_functions_share_a_name() -> None:
    assert duplicate_public_names(ROOT, ("coordinator", "tasks", "agents", "blockopt")) == {}


def test_no_module_over_400_lines_without_saying_why_it_is_one_job() -> None:
    assert long_modules_without_reason(ROOT) == []


def test_one_task_status_enum() -> None:
    defined = [
        str(path.relative_to(ROOT))
        for pkg in ("coordinator", "tasks", "agents", "blockopt")
        for path in (ROOT / pkg).rglob("*.py")
        if re.search(r"^class TaskStatus\b", path.read_text(), re.MULTILINE)
    ]
    assert defined == ["coordinator/status.py"]


def test_coordinator_and_agents_name_no_installed_kind() -> None:
    names = sorted(kinds())
    assert {"quadratic", "routing", "sqlplan"} <= set(names)  # the built-in kinds are among those checked
    assert kind_names_in_code(ROOT, ("coordinator", "agents"), names) == []


# -- each check fails on a faulty tree --------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "importer"),
    [
        ("from coordinator.runtime.service import CoordinatorService\n", "coordinator/engine/rounds.py"),
        ("from coordinator.reports import ledger\n", "coordinator/store/base.py"),
        ("from coordinator import runtime\n", "coordinator/reports/books.py"),
        ("import coordinator.api.main\n", "coordinator/runtime/service.py"),
        ("def f() -> None:\n    from ..api import main\n", "coordinator/engine/rounds.py"),
    ],
)
def test_an_upward_import_is_found(tmp_path: Path, source: str, importer: str) -> None:
    _write(tmp_path, {importer: source, "coordinator/errors.py": ""})
    (found,) = upward_imports(tmp_path)
    assert found.startswith(f"{importer}:")


def test_a_downward_import_passes_and_an_unplaced_module_fails(tmp_path: Path) -> None:
    down = "from coordinator.engine import rounds\nfrom coordinator import errors\n"
    _write(tmp_path, {"coordinator/api/main.py": down})
    assert upward_imports(tmp_path) == []
    _write(tmp_path, {"coordinator/flat.py": "from coordinator import errors\n"})
    with pytest.raises(KeyError):
        upward_imports(tmp_path)


def test_a_duplicate_name_is_found(tmp_path: Path) -> None:
    _write(tmp_path, {"a/x.py": "class Snapshot:\n    pass\n", "b/y.py": "def Snapshot() -> None: ...\n"})
    assert duplicate_public_names(tmp_path, ("a", "b")) == {"Snapshot": ["a/x.py", "b/y.py"]}


def test_a_kind_name_in_code_or_an_example_is_found_and_a_comment_is_not(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "coordinator/x.py": '# quadratic in a comment is fine\nEXAMPLE = {"kind": "quadratic"}\n',
            "agents/y.py": 'def f() -> None:\n    """Works for routing."""\n',
            "coordinator/ui/static/app.js": "const kind = 'sqlplan';\n",
        },
    )
    found = kind_names_in_code(tmp_path, ("coordinator", "agents"), ["quadratic", "routing", "sqlplan"])
    assert sorted(f.rsplit(":", 1)[0] for f in found) == [
        "agents/y.py:2",
        "coordinator/ui/static/app.js:1",
        "coordinator/x.py:2",
    ]


def test_a_long_module_without_a_reason_is_found(tmp_path: Path) -> None:
    body = "x = 1\n" * 401
    _write(
        tmp_path,
        {
            "coordinator/long.py": '"""Long."""\n' + body,
            "coordinator/ok.py": '"""One job over 400 lines: why."""\n' + body,
        },
    )
    assert [f.split(":")[0] for f in long_modules_without_reason(tmp_path)] == ["coordinator/long.py"]
