"""tests/ mirrors the packages (tests/README.md): a test of ``coordinator/store`` sits in
``tests/coordinator/store/``, so a reader finds a module's tests without a search, and new files
cannot drift back into a flat folder."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CROSS_CUTTING = ("e2e", "project")
"""Folders of tests/ that mirror no package: end-to-end suites, and checks of the repository as a whole."""


def misplaced(root: Path) -> list[str]:
    """Every file under ``root/tests`` that breaks the rule, with the reason."""
    tests = root / "tests"
    out: list[str] = []
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests)
        if "__pycache__" in rel.parts:
            continue
        folder = rel.parent
        if folder == Path("."):
            if path.name.startswith("test_"):
                out.append(f"tests/{rel}: test file at the top of tests/ (move it to its package's folder)")
            continue
        if path.name == "__init__.py":
            continue
        if not path.name.startswith("test_"):
            out.append(f"tests/{rel}: not a test file (support modules stay at tests/)")
        elif folder.parts[0] not in CROSS_CUTTING and not (root / folder).is_dir():
            out.append(f"tests/{rel}: tests/{folder.as_posix()}/ mirrors no folder of the repository")
        elif not (path.parent / "__init__.py").exists():
            out.append(f"tests/{rel}: tests/{folder.as_posix()}/ has no __init__.py")
    return out


def test_every_test_file_sits_in_the_folder_of_its_package() -> None:
    assert misplaced(ROOT) == []


def _tree(root: Path, files: list[str]) -> Path:
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    return root


def test_a_well_placed_tree_passes(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        [
            "coordinator/store/__init__.py",
            "tests/__init__.py",
            "tests/redis_support.py",
            "tests/conftest.py",
            "tests/coordinator/__init__.py",
            "tests/coordinator/store/__init__.py",
            "tests/coordinator/store/test_redis.py",
            "tests/e2e/__init__.py",
            "tests/e2e/test_service_e2e.py",
        ],
    )
    assert misplaced(root) == []


def test_misplaced_files_are_named_with_the_reason(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        [
            "coordinator/store/__init__.py",
            "tests/__init__.py",
            "tests/test_flat.py",
            "tests/nowhere/__init__.py",
            "tests/nowhere/test_lost.py",
            "tests/coordinator/__init__.py",
            "tests/coordinator/store/__init__.py",
            "tests/coordinator/store/helpers.py",
            "tests/coordinator/engine/test_x.py",
            "tests/e2e/test_no_init.py",
        ],
    )
    assert misplaced(root) == [
        "tests/coordinator/engine/test_x.py: tests/coordinator/engine/ mirrors no folder of the repository",
        "tests/coordinator/store/helpers.py: not a test file (support modules stay at tests/)",
        "tests/e2e/test_no_init.py: tests/e2e/ has no __init__.py",
        "tests/nowhere/test_lost.py: tests/nowhere/ mirrors no folder of the repository",
        "tests/test_flat.py: test file at the top of tests/ (move it to its package's folder)",
    ]
