"""SIPP compiled with numba: the search of ``sipp.py`` over array mirrors of the reservation table.

The LNS spends most of its time in SIPP (71% of a 3-agent team's CPU at 300 robots), and Python pays about
a microsecond per dict lookup of it. Here the same search runs over arrays:

- ``occupied[cell, t]``: robots moving through ``cell`` at time ``t`` (the table's ``vert``);
- ``stepping[cell, t, d]``: robots stepping out of ``cell`` in direction ``d`` between t and t+1 (``edge``);
- ``parked[cell]``: the time from which a robot is parked there for good, or -1 (``park``);
- ``latest[cell]``: no robot moves through ``cell`` after this time (an upper bound: removals leave it).

``apply_run`` keeps the mirrors in step with ``Reservations``; ``path_conflicts_of`` counts a path's
conflicts off them (``plan_jit`` builds the coordinator's counts on these two). A cell's safe intervals
are read off its row of ``occupied`` when the search first reaches it, so nothing is cached between
searches and nothing needs invalidating. Nodes, their order in the
heap and the tie-breaks are those of ``sipp.sipp_search_python``: both return the very same path
(tests/tasks/routing/test_routing_sipp_jit.py).
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

INF = 1 << 60
SLOT = 1 << 32
FOUND, NO_PATH, CUT_SHORT = 0, 1, 2
"""Kernel outcomes: a path; a proof that there is none; the expansion budget ran out (a path may exist)."""
MASK32 = 0xFFFFFFFF


@njit(cache=True)
def tie_key(node: int, salt: int) -> int:
    """The order among nodes of equal f and g: by node with salt 0, else a hash of (node, salt).

    A search with a fixed tie-break returns the same path against the same table every time, so an
    LNS that re-plans a neighbourhood again meets the same equal-cost paths and stays on its plateau;
    MAPF-LNS2's SIPP breaks such ties at random. A salted hash does that in a way the Python oracle can
    repeat (``py_func``): the same salt, the same path."""
    if salt == 0:
        return 0
    x = (node ^ (node >> 32) ^ salt) & MASK32
    x = (((x >> 16) ^ x) * 0x45D9F3B) & MASK32
    x = (((x >> 16) ^ x) * 0x45D9F3B) & MASK32
    return (x >> 16) ^ x


@njit(cache=True)
def direction(frm: int, to: int, width: int) -> int:
    """0..3 for a step right, left, down, up (``to - frm`` is 1, -1, width, -width)."""
    diff = to - frm
    if diff == width:
        return 2
    if diff == -width:
        return 3
    return 0 if diff == 1 else 1


@njit(cache=True)
def apply_run(
    occupied: np.ndarray,
    stepping: np.ndarray,
    latest: np.ndarray,
    t0: int,
    cells: np.ndarray,
    arrives: bool,
    width: int,
    sign: int,
) -> None:
    """Add (sign 1) or take out (-1) one robot's cells at t0, t0+1, ...; an arriving run's last cell is its
    goal, where it parks (the caller sets ``parked``) instead of moving through."""
    moving = len(cells) - 1 if arrives else len(cells)
    for i in range(moving):
        occupied[cells[i], t0 + i] += sign
        if t0 + i > latest[cells[i]]:
            latest[cells[i]] = t0 + i
    for i in range(len(cells) - 1):
        a, b = cells[i], cells[i + 1]
        if a != b:
            stepping[a, t0 + i, direction(a, b, width)] += sign


@njit(cache=True)
def path_conflicts_of(
    occupied: np.ndarray, stepping: np.ndarray, parked: np.ndarray, latest: np.ndarray, path: np.ndarray,
    width: int,
) -> int:  # fmt: skip
    """``Reservations.path_conflicts`` read off the mirror: a path's conflicts with every robot in the table
    (both in a cell, a cell where one is parked, a swap, a robot moving through the path's goal once it is
    parked there). Reading the dicts instead first replays every path change deferred since they were last
    read: most of ``BlockSearch.adopt``'s cost, a tenth of a team agent's CPU (16 agents, k = 300)."""
    horizon = occupied.shape[1]
    last = len(path) - 1
    total = 0
    for t in range(last):
        c = path[t]
        park = parked[c]
        if park >= 0 and park <= t:
            total += 1
        if t < horizon:
            total += occupied[c, t]
            b = path[t + 1]
            if b != c:
                total += stepping[b, t, direction(b, c, width)]
    goal = path[last]
    for t in range(last, min(latest[goal], horizon - 1) + 1):
        total += occupied[goal, t]
    return total


@njit(cache=True)
def _intervals(
    occupied: np.ndarray, latest: np.ndarray, parked: np.ndarray, cell: int, ignore_t0: bool,
    lo: np.ndarray, hi: np.ndarray, at: int,
) -> int:  # fmt: skip
    """Write ``cell``'s safe intervals into lo/hi from index ``at``; return how many (as
    ``sipp.safe_intervals``)."""
    park = parked[cell]
    start = 0
    count = 0
    for t in range(latest[cell] + 1):
        if occupied[cell, t] == 0 or (ignore_t0 and t == 0):
            continue
        if park >= 0 and t >= park:
            break
        if t > start:
            lo[at + count] = start
            hi[at + count] = t - 1
            count += 1
        start = t + 1
    end = INF if park < 0 else park - 1
    if park == 0 and ignore_t0:
        end = 0
    if start <= end:
        lo[at + count] = start
        hi[at + count] = end
        count += 1
    return count


@njit(cache=True)
def _grow(a: np.ndarray, need: int) -> np.ndarray:
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True)
def search(  # noqa: C901 (one search loop, kept whole as in sipp.py)
    steps: np.ndarray,
    h: np.ndarray,
    occupied: np.ndarray,
    stepping: np.ndarray,
    latest: np.ndarray,
    parked: np.ndarray,
    rows: int,
    width: int,
    start: int,
    goal: int,
    cap: int,
    expansions: int,
    salt: int,
) -> tuple[np.ndarray, int]:
    """(cells per time step, outcome): the earliest arrival at ``goal`` by ``cap`` against the table;
    ``salt`` picks among equal-cost paths (``tie_key``)."""
    none = np.empty(0, np.int64)
    if h[start] < 0:
        return none, NO_PATH
    n = h.shape[0]
    offset = np.full(n, -1, np.int64)
    count = np.zeros(n, np.int64)
    size = 1024 + rows
    lo = np.empty(size, np.int64)
    hi = np.empty(size, np.int64)
    best = np.empty(size, np.int64)
    parent = np.empty(size, np.int64)
    cell_of = np.empty(size, np.int64)
    used = 0
    # the start's intervals ignore its own t=0 visit
    k = _intervals(occupied, latest, parked, start, True, lo, hi, 0)
    offset[start], count[start] = 0, k
    for i in range(k):
        best[i] = INF
        cell_of[i] = start
    used = k
    if k == 0 or lo[0] != 0 or h[start] > cap:
        return none, NO_PATH
    best[0] = 0
    parent[0] = -1
    heap = [(h[start], 0, tie_key(start * SLOT, salt), start * SLOT)]
    pops = 0
    while heap:
        _f, negg, _tie, node = heapq.heappop(heap)
        g = -negg
        cell = node // SLOT
        here = offset[cell] + node % SLOT
        if best[here] < g:
            continue  # stale: reached earlier since
        pops += 1
        if pops % 1024 == 0 and pops > expansions:
            return none, CUT_SHORT
        hi_here = hi[here]
        if cell == goal and hi_here == INF:
            return _unwind(parent, best, cell_of, here), FOUND
        for s in range(steps.shape[1]):
            nb = steps[cell, s]
            if nb < 0:
                break
            if offset[nb] < 0:
                need = used + rows + 2
                lo, hi = _grow(lo, need), _grow(hi, need)
                best, parent, cell_of = _grow(best, need), _grow(parent, need), _grow(cell_of, need)
                k = _intervals(occupied, latest, parked, nb, False, lo, hi, used)
                offset[nb], count[nb] = used, k
                for i in range(used, used + k):
                    best[i] = INF
                    cell_of[i] = nb
                used += k
            first, m = offset[nb], count[nb]
            # skip the intervals that end before we could arrive (bisect on their ends)
            a, b = 0, m
            while a < b:
                mid = (a + b) // 2
                if hi[first + mid] < g + 1:
                    a = mid + 1
                else:
                    b = mid
            back = direction(nb, cell, width)
            for j in range(a, m):
                lo2, hi2 = lo[first + j], hi[first + j]
                if lo2 - 1 > hi_here:
                    break
                d = g if g >= lo2 - 1 else lo2 - 1
                if d < lo2:  # nb is taken at d: whoever leaves it may be stepping onto our cell
                    last = hi_here if hi_here < hi2 else hi2 - 1
                    while d <= last and d < rows and stepping[nb, d, back] > 0:
                        d += 1  # someone steps nb -> cell between d and d+1: a swap
                    if d > last:
                        continue
                arr = d + 1
                if arr + h[nb] > cap:
                    break  # later intervals arrive later still
                there = first + j
                if best[there] <= arr:
                    continue
                best[there] = arr
                parent[there] = here
                key = nb * SLOT + j
                heapq.heappush(heap, (arr + h[nb], -arr, tie_key(key, salt), key))
    return none, NO_PATH


@njit(cache=True)
def _unwind(parent: np.ndarray, arrival: np.ndarray, cell_of: np.ndarray, node: int) -> np.ndarray:
    """Cells per time step: each cell is held from its arrival until the step to the next one."""
    path = np.empty(arrival[node] + 1, np.int64)
    cur = node
    t = arrival[node]
    path[t] = cell_of[node]
    while parent[cur] >= 0:
        prev = parent[cur]
        for s in range(arrival[prev], arrival[cur]):
            path[s] = cell_of[prev]
        cur = prev
    return path


def warm() -> None:
    """Compile every kernel now, or load it from numba's on-disk cache (about 6 s cold, 0.2 s warm), so that
    worker processes started later find the cache filled and no search pays for compiling."""
    occupied = np.zeros((2, 4), np.int16)
    stepping = np.zeros((2, 4, 4), np.int16)
    latest = np.full(2, -1, np.int64)
    parked = np.full(2, -1, np.int64)
    apply_run(occupied, stepping, latest, 0, np.array([0, 1], np.int64), True, 2, 1)
    path_conflicts_of(occupied, stepping, parked, latest, np.array([1, 0], np.int64), 2)
    steps = np.array([[1, -1, -1, -1], [0, -1, -1, -1]], np.int64)
    search(steps, np.array([1, 0], np.int64), occupied, stepping, latest, parked, 3, 2, 0, 1, 10, 100, 0)
