"""Safe-interval path planning (SIPP, Phillips & Likhachev 2011) against a reservation table.

A search node is a (cell, safe interval) pair instead of a (cell, time) pair:
a cell's timeline is cut only where another robot occupies it, so long waits
cost one node instead of one per time step. It finds the earliest collision-free
arrival (no vertex, swap or parked-robot conflict with anything in the table, and
no later visit to the goal once parked), which is what space-time A* returns
whenever a conflict-free path exists; when none does, it returns None and the
caller falls back to the conflict-minimizing space-time A*.

``sipp_search`` runs the search compiled (``sipp_jit.py``); ``sipp_search_python`` is the same search in
plain Python, kept as the statement of the algorithm and the oracle of the compiled one.
"""

from __future__ import annotations

import bisect
import heapq
import time

from tasks.routing import sipp_jit
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
    bound: int | None = None,
    salt: int = 0,
) -> Path | None:
    """The earliest-arriving conflict-free path from start to goal, or None (none within max_len / budget).

    With ``bound``, only arrivals at or before ``bound`` count (the LNS keeps a re-planned group only
    if its sum of costs does not grow): nodes that cannot reach the goal by then are never pushed, so a
    search that would only find a longer path fails fast; a path it does find is the same one. ``salt``
    chooses among the equal-cost paths (0: always the same one; ``sipp_jit.tie_key``)."""
    return sipp_search(grid, start, goal, table, max_len, deadline, expansions, bound, salt)[0]


def sipp_search(
    grid: Grid,
    start: int,
    goal: int,
    table: Reservations,
    max_len: int,
    deadline: float | None = None,
    expansions: int = 200_000,
    bound: int | None = None,
    salt: int = 0,
) -> tuple[Path | None, bool]:
    """``sipp_path``'s answer and whether it is a proof: False when the expansion budget or the
    deadline cut the search short (a path may exist), True when the answer is exact.

    Runs compiled (``sipp_jit``) over the table's array mirror: the same path as
    ``sipp_search_python`` in an eighth to a tenth of the time (benchmarks/routing.py sipp). The
    deadline is checked before the search starts; the expansion budget bounds the search itself."""
    if deadline is not None and time.perf_counter() > deadline:
        return None, False
    h = grid.distance_array(goal)
    if h[start] == UNREACHABLE:
        return None, True
    arrays = table.arrays(grid.width)
    cap = max_len if bound is None else min(max_len, bound)
    rows = min(table.t_static + 1, arrays.occupied.shape[1])
    cells, outcome = sipp_jit.search(
        grid.step_array, h, arrays.occupied, arrays.stepping, arrays.latest, arrays.parked, rows, grid.width,
        start, goal, cap, expansions, salt,
    )  # fmt: skip
    if outcome == sipp_jit.FOUND:
        return tuple(cells.tolist()), True
    return None, outcome == sipp_jit.NO_PATH


def sipp_search_python(
    grid: Grid,
    start: int,
    goal: int,
    table: Reservations,
    max_len: int,
    deadline: float | None = None,
    expansions: int = 200_000,
    bound: int | None = None,
    salt: int = 0,
) -> tuple[Path | None, bool]:
    """``sipp_search`` in plain Python: the readable statement of the search, and the oracle that the
    compiled one must match path for path (tests/test_routing_sipp_jit.py).

    Search nodes are ints ``cell * SLOT + interval index`` (ordered as the (cell, interval) pairs
    they stand for, so ties break the same way), and a popped node needs no closed set: the BFS
    heuristic is consistent, so a node's first pop has its least arrival and any later push of it is
    turned down by ``best``. A swap can only block the step into a neighbour's interval at its first
    time: at any later departure the neighbour is inside its own safe interval, so nobody stands there
    to step across."""
    h = grid.distances(goal)
    if h[start] == UNREACHABLE:
        return None, True
    n = grid.n_cells
    steps = grid._steps
    edge = table.edge
    cache: dict[int, tuple[list[tuple[int, int]], list[int]]] = {}
    cap = max_len if bound is None else min(max_len, bound)

    def fetch(c: int) -> tuple[list[tuple[int, int]], list[int]]:
        """The cell's safe intervals and their ends (the start's own ignore its t=0 visit)."""
        iv = safe_intervals(table, c, ignore_t0=c == start)
        got = cache[c] = (iv, [b for _, b in iv])
        return got

    first = fetch(start)[0]
    if not first or first[0][0] != 0:
        return None, True
    if h[start] > cap:
        return None, True
    root = start * SLOT
    tie = sipp_jit.tie_key.py_func
    # (f, -g, tie, node): g = earliest arrival in the node's interval; the tuple is unique per push
    heap: list[tuple[int, int, int, int]] = [(h[start], 0, tie(root, salt), root)]
    best: dict[int, int] = {root: 0}
    parent: dict[int, int] = {root: -1}
    pop, push, bisect_left = heapq.heappop, heapq.heappush, bisect.bisect_left
    pops = 0
    while heap:
        _f, negg, _tie, node = pop(heap)
        g = -negg
        if best[node] < g:
            continue  # a stale entry: the node was reached earlier since
        pops += 1
        if pops % 1024 == 0 and (
            pops > expansions or (deadline is not None and time.perf_counter() > deadline)
        ):
            return None, False
        cell, iv = divmod(node, SLOT)
        got = cache.get(cell)
        lo, hi = (got if got is not None else fetch(cell))[0][iv]
        if cell == goal and hi == INF:
            return _unwind(parent, best, node), True
        for nb in steps[cell]:
            got = cache.get(nb)
            ivs, ends = got if got is not None else fetch(nb)
            hnb = h[nb]
            base = nb * SLOT
            # skip the intervals that end before we could arrive (busy cells have many)
            for j in range(bisect_left(ends, g + 1), len(ivs)):
                lo2, hi2 = ivs[j]
                if lo2 - 1 > hi:
                    break
                # depart at d (g <= d <= hi), arrive at d + 1 inside [lo2, hi2]
                d = g if g >= lo2 - 1 else lo2 - 1
                if d < lo2:  # nb is taken at d: whoever leaves it may be stepping onto our cell
                    last = hi if hi < hi2 else hi2 - 1
                    while d <= last and edge.get((d * n + nb) * n + cell, 0):
                        d += 1  # someone steps nb -> cell between d and d+1: a swap
                    if d > last:
                        continue
                arr = d + 1
                if arr + hnb > cap:
                    break  # later intervals arrive later still
                key = base + j
                if best.get(key, INF) <= arr:
                    continue
                best[key] = arr
                parent[key] = node
                push(heap, (arr + hnb, -arr, tie(key, salt), key))
    return None, True


SLOT = 1 << 32
"""Search node = cell * SLOT + interval index: more intervals than any cell can have."""


def _unwind(parent: dict[int, int], arrival: dict[int, int], node: int) -> Path:
    """Cells per time step: each cell is held from its arrival until the step to the next one."""
    chain: list[tuple[int, int]] = []
    cur = node
    while cur >= 0:
        chain.append((arrival[cur], cur // SLOT))
        cur = parent[cur]
    chain.reverse()
    path: list[int] = []
    for (t0, c0), (t1, _c1) in zip(chain, chain[1:]):
        path.extend([c0] * (t1 - t0))
    path.append(chain[-1][1])
    return tuple(path)
