"""Git refs of this checkout exported as trees, for the benchmarks that run several versions side by side.

A tree's code runs in a process of its own: ``tree_env`` puts the tree first on that process's import path
(``PYTHONPATH``), so ``tasks`` and friends come from the tree, never from this checkout.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from benchmarks.lib.cli import fail

ROOT = Path(__file__).resolve().parents[2]


class ExportError(Exception):
    """A ref git cannot export (unknown, or not a commit); the message is git's one line."""


def export_trees(refs: Sequence[str], into: Path) -> dict[str, str]:
    """Each ref's ``git archive`` unpacked in a directory of its own under ``into``: ref -> path."""
    trees = {}
    for ref in refs:
        tree = into / ref.replace("/", "_")
        tree.mkdir(exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True)
        if archive.returncode != 0:
            raise ExportError(f"cannot export {ref}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        trees[ref] = str(tree)
    return trees


@contextmanager
def exported(refs: Sequence[str], prog: str) -> Iterator[dict[str, str]]:
    """``export_trees`` into a temporary directory, removed afterwards; a ref that cannot be exported ends
    the command with one line on stderr and exit code 2, before any run."""
    with tempfile.TemporaryDirectory(prefix=f"{prog}-") as tmp:
        try:
            trees = export_trees(refs, Path(tmp))
        except ExportError as exc:
            fail(prog, str(exc))
        yield trees


def tree_env(tree: str | Path, **extra: str) -> dict[str, str]:
    """The environment of a process that must import ``tree``'s packages first."""
    return {**os.environ, "PYTHONPATH": str(tree), **extra}
