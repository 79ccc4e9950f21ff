"""Git refs of this checkout exported as trees, for the benchmarks that run several versions side by side,
and the ``MAP:K`` instances they take.

Import it in the parent process only, after a worker has branched off: a worker imports its own tree's
``benchmarks`` package, and must not find this checkout's already imported.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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


@contextmanager
def exported(refs: Sequence[str], prog: str) -> Iterator[dict[str, str]]:
    """``export_trees`` into a temporary directory, removed afterwards; a ref that cannot be exported ends
    the command with one line on stderr and exit code 2, before any run."""
    with tempfile.TemporaryDirectory(prefix=f"{prog}-") as tmp:
        try:
            trees = export_trees(refs, Path(tmp))
        except ExportError as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        yield trees


def instances(items: Sequence[str], prog: str) -> list[tuple[str, str]]:
    """``MAP:K`` arguments as (map, k); anything else ends the command with one line and exit code 2."""
    bad = [item for item in items if item.count(":") != 1 or not item.partition(":")[2].isdigit()]
    if bad:
        print(f"{prog}: --only wants MAP:K (K robots), got {bad[0]!r}", file=sys.stderr)
        raise SystemExit(2)
    return [(m, k) for m, _, k in (item.partition(":") for item in items)]
