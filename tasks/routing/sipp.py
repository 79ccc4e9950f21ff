"""Safe-interval path planning (SIPP, Phillips & Likhachev 2011) against a reservation table.

A search node is a (cell, safe interval) pair instead of a (cell, time) pair:
a cell's timeline is cut only where another robot occupies it, so long waits
cost one node instead of one per time step. It finds the earliest collision-free
arrival (no vertex, swap or parked-robot conflict with anything in the table, and
no later visit to the goal once parked), which is what space-time A* returns
whenever a conflict-free path exists; when none does, it returns None and the
caller falls back to the conflict-minimizing space-time A*.
"""

from __future__ import annotations

import bisect
import heapq
import time

from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.occupancy import Path
from tasks.routing.reservations import Reservations

INF = 1 << 60


def safe_intervals(table: Reservations, cell: int, ignore_t0: bool = False) -> list[tuple[int, int]]:
    """Maximal [lo, hi] time ranges in which ``cell`` is free of other robots (hi = INF: free for good)."""
    unsafe = sorted(set(table.visits.get(cell, ())))
    park = table.park.get(cell)
    if ignore_t0 and unsafe and unsafe[0] == 0:
        unsafe = unsafe[1:]
    out: list[tuple[int, int]] = []
    lo = 0
    for t in unsafe:
        if park is not None and t >= park:
            break
        if t > lo:
            out.append((lo, t - 1))
        lo = t + 1
    end = INF if park is None else park - 1
    if park is not None and ignore_t0 and park == 0:
        end = 0
    if lo <= end:
        out.append((lo, end))
    return out


def sipp_path(
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

    shared = table.intervals

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
    for (t0, c0), (t1, _c1) in zip(chain, chain[1:]):
        path.extend([c0] * (t1 - t0))
    path.append(chain[-1][1])
    return tuple(path)
