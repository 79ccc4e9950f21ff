"""Routing searches as they were before the speed-ups, kept verbatim as the oracles of the equivalence
tests: SIPP before the int-keyed rewrite (tasks/routing/sipp.py) must return the very same paths, and a
block's LNS step before the bounded searches (``repair.BlockSearch.try_group``) the very same plans."""

from __future__ import annotations

import bisect
import heapq
import time
from collections.abc import Sequence

from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.occupancy import Path, change_in_conflicts, cost
from tasks.routing.repair import BlockSearch, soft_path
from tasks.routing.reservations import Reservations, TableArrays
from tasks.routing.sipp import INF, safe_intervals


def reference_sipp_path(  # noqa: C901 (verbatim)
    grid: Grid,
    start: int,
    goal: int,
    table: Reservations,
    max_len: int,
    deadline: float | None = None,
    expansions: int = 200_000,
) -> Path | None:
    """The earliest-arriving conflict-free path from start to goal, or None (none within max_len / budget)."""
    h = grid.distances(goal)
    if h[start] == UNREACHABLE:
        return None
    n = grid.n_cells
    moves = grid._moves
    edge = table.edge
    cache: dict[int, list[tuple[int, int]]] = {}
    ends: dict[int, list[int]] = {}

    shared: dict[int, tuple[list[tuple[int, int]], list[int]]] = {}  # (the table's cache is gone)

    def intervals(c: int) -> list[tuple[int, int]]:
        iv = cache.get(c)
        if iv is None:
            if c == start:
                iv = safe_intervals(table, c, ignore_t0=True)
                e = [b for _, b in iv]
            else:
                got = shared.get(c)
                if got is None:
                    fresh = safe_intervals(table, c)
                    got = shared[c] = (fresh, [b for _, b in fresh])
                iv, e = got
            cache[c] = iv
            ends[c] = e
        return iv

    first = intervals(start)
    if not first or first[0][0] != 0:
        return None
    # node = (cell, interval index); g = earliest arrival time in that interval
    heap: list[tuple[int, int, int, int, int]] = [(h[start], 0, start, 0, 0)]  # (f, -g, cell, iv, seq)
    best: dict[tuple[int, int], int] = {(start, 0): 0}
    parent: dict[tuple[int, int], tuple[int, int] | None] = {(start, 0): None}
    closed: set[tuple[int, int]] = set()
    seq = pops = 0
    while heap:
        _f, negg, cell, iv, _ = heapq.heappop(heap)
        g = -negg
        node = (cell, iv)
        if node in closed or best.get(node, INF) < g:
            continue
        closed.add(node)
        pops += 1
        if pops % 1024 == 0 and (
            pops > expansions or (deadline is not None and time.perf_counter() > deadline)
        ):
            return None
        lo, hi = intervals(cell)[iv]
        if cell == goal and hi == INF:
            return _unwind(parent, best, node)
        for nb in moves[cell]:
            if nb == cell:
                continue
            ivs = intervals(nb)
            # skip the intervals that end before we could arrive (busy cells have many)
            for j in range(bisect.bisect_left(ends[nb], g + 1), len(ivs)):
                lo2, hi2 = ivs[j]
                # depart at d (g <= d <= hi), arrive at d + 1 inside [lo2, hi2]
                d = max(g, lo2 - 1)
                last = min(hi, hi2 - 1 if hi2 < INF else INF)
                if lo2 - 1 > hi:
                    break
                while d <= last and edge.get((d * n + nb) * n + cell, 0):
                    d += 1  # someone steps nb -> cell between d and d+1: a swap
                if d > last or d + 1 > max_len:
                    continue
                key = (nb, j)
                arr = d + 1
                if key in closed or best.get(key, INF) <= arr:
                    continue
                best[key] = arr
                parent[key] = node
                seq += 1
                heapq.heappush(heap, (arr + h[nb], -arr, nb, j, seq))
    return None


def _unwind(
    parent: dict[tuple[int, int], tuple[int, int] | None],
    arrival: dict[tuple[int, int], int],
    node: tuple[int, int],
) -> Path:
    """Cells per time step: each cell is held from its arrival until the step to the next one."""
    chain: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = node
    while cur is not None:
        chain.append((arrival[cur], cur[0]))
        cur = parent[cur]
    chain.reverse()
    path: list[int] = []
    for (t0, c0), (t1, _c1) in zip(chain, chain[1:], strict=False):
        path.extend([c0] * (t1 - t0))
    path.append(chain[-1][1])
    return tuple(path)


def reference_try_group(
    search: BlockSearch, group: Sequence[int], deadline: float | None
) -> tuple[bool, int, int]:
    """``BlockSearch.try_group`` before the bounded searches on a collision-free block, verbatim."""
    full, paths = search.full, search.paths
    old = {i: paths[i] for i in group}
    for p in old.values():
        full.remove_path(p)
    new: dict[int, Path] = {}
    for i in group:
        found = soft_path(search.grid, search.starts[i], search.goals[i], full, search.max_len, deadline)
        new[i] = old[i] if found is None else found[0]
        full.add_path(new[i])
    d_inside = change_in_conflicts(search.index, old, new)
    ext = {i: search.external.path_conflicts(p) for i, p in new.items()}
    collisions = search.collisions + d_inside + sum(ext.values()) - sum(search.ext[i] for i in group)
    soc = search.soc + sum(cost(p) for p in new.values()) - sum(cost(p) for p in old.values())
    if (collisions, soc) > (search.collisions, search.soc):
        for i in group:
            full.remove_path(new[i])
            full.add_path(old[i])
        return False, collisions, soc
    for i in group:
        search.index.remove(i, old[i])
        search.index.add(i, new[i])
        paths[i] = new[i]
        search.ext[i] = ext[i]
    search.inside += d_inside
    search.soc = soc
    return True, collisions, soc


def reference_follow(search: BlockSearch, before: Sequence[Path], now: Sequence[Path]) -> tuple[int, int]:
    """``BlockSearch.follow`` before a clean search stopped counting each change's conflicts, verbatim."""
    paths = search.paths
    taken = {i: p for i, (b, p) in enumerate(zip(before, now, strict=True)) if p is not b and p != b}
    changed = {i: p for i, p in taken.items() if paths[i] != p}
    clean = search.collisions == 0
    search._replace(changed)
    reverted = 0
    while search.collisions:
        colliding = search._colliding_with(changed) if clean else set(search.colliding()[1])
        changed = {i: now[i] for i in colliding if paths[i] != now[i]}
        if not changed:
            break
        search._replace(changed)
        reverted += len(changed)
    for i, p in enumerate(now):
        if paths[i] is not p and paths[i] == p:
            paths[i] = p
    return len(taken), reverted


def mirror_matches(table: Reservations, width: int) -> bool:
    """The table's array mirror holds what one made afresh from its dicts would (its ``latest`` may only be
    later: an upper bound that removals leave)."""
    import numpy as np

    if table.mirror is None:
        return False
    a, b = table.mirror, TableArrays.of(table, width)
    t = min(a.occupied.shape[1], b.occupied.shape[1])
    return (
        np.array_equal(a.parked, b.parked)
        and bool((a.latest >= b.latest).all())
        and np.array_equal(a.occupied[:, :t], b.occupied[:, :t])
        and not a.occupied[:, t:].any() and not b.occupied[:, t:].any()
        and np.array_equal(a.stepping[:, :t], b.stepping[:, :t])
        and not a.stepping[:, t:].any() and not b.stepping[:, t:].any()
    )  # fmt: skip
