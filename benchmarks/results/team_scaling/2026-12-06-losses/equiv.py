"""Lab check (2026-12-06): the new ``BlockSearch.follow`` (f96fac5: the collisions found from the paths
just changed) gives what the old one (a collision graph of the whole index) gave. A 16-agent virtual replay,
seed 2; at every follow the old algorithm runs first on a copy of the search; paths, collisions, sum of costs
and the counts must agree.

    PYTHONPATH=. .venv/bin/python benchmarks/results/team_scaling/2026-12-06-losses/equiv.py SECONDS
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks import team_scaling as ts
from tasks.routing import repair

new_follow = repair.BlockSearch.follow


def old_follow(search: Any, before: Sequence[Any], now: Sequence[Any]) -> tuple[int, int]:
    """``follow`` as it was at 537cfab."""
    paths = search.paths
    taken = {i: p for i, (b, p) in enumerate(zip(before, now, strict=True)) if p is not b and p != b}
    search._replace({i: p for i, p in taken.items() if paths[i] != p})
    reverted = 0
    while search.collisions:
        _graph, colliding = search.colliding()
        back = {i: now[i] for i in colliding if paths[i] != now[i]}
        if not back:
            break
        search._replace(back)
        reverted += len(back)
    for i, p in enumerate(now):
        if paths[i] is not p and paths[i] == p:
            paths[i] = p
    return len(taken), reverted


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
