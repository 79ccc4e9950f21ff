"""Git refs of this checkout exported as trees, for the benchmarks that run several versions side by side.

Import it in the parent process only, after a worker has branched off: a worker imports its own tree's
``benchmarks`` package, and must not find this checkout's already imported.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
