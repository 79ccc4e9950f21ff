"""Lab check (2026-12-06): the new ``BlockSearch.follow`` (f96fac5: the collisions found from the paths
just changed) gives what the old one (a collision graph of the whole index) gave. A 16-agent virtual replay,
seed 2; at every follow the old one (537cfab's, read from git) runs first on a copy of the search; paths,
collisions, sum of costs and the counts must agree.

    PYTHONPATH=. .venv/bin/python benchmarks/results/team_scaling/2026-12-06-losses/equiv.py SECONDS
"""

from __future__ import annotations

import copy
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import team_scaling as ts
from tasks.routing import repair

new_follow = repair.BlockSearch.follow


def follow_at(commit: str) -> Any:
    """``BlockSearch.follow`` as ``tasks/routing/repair.py`` was at ``commit``: read from git and imported
    from a temporary file, so that the old code is compared, not a copy of it."""
    source = subprocess.run(
        ["git", "show", f"{commit}:tasks/routing/repair.py"], check=True, capture_output=True, text=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"repair_{commit}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
        spec.loader.exec_module(module)
    return module.BlockSearch.follow


old_follow = follow_at("537cfab")


def clone(search: Any) -> Any:
    other = copy.copy(search)
    other.paths, other.ext = list(search.paths), list(search.ext)
    other.full, other.index = search.full.copy(), search.index.copy()
    return other


stats = {"calls": 0, "same": 0, "with reverts": 0}


def checked_follow(search: Any, before: Sequence[Any], now: Sequence[Any], *rest: Any) -> tuple[int, int]:
    other = clone(search)
    old = old_follow(other, before, now)
    new = new_follow(search, before, now, *rest)
    stats["calls"] += 1
    stats["with reverts"] += new[1] > 0
    was = (old, other.paths, other.collisions, other.soc)
    same = was == (new, search.paths, search.collisions, search.soc)
    stats["same"] += same
    if not same:
        print("differs:", old, new, other.collisions, search.collisions, other.soc, search.soc)
    return new


repair.BlockSearch.follow = checked_follow  # type: ignore[method-assign]
args = ts.parse(
    ["virtual", "--robots", "300", "--agents", "16", "--seeds", "2", "--time", sys.argv[1], "--at", "1",
     "--out", "/dev/null"]
)  # fmt: skip
ts.warm_up(args)
run = ts.virtual_run(args, 16, 2)
print(stats, "final", run["final"])
