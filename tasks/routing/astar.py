"""Space-time A* with soft reservations: fewest conflicts first, then earliest arrival.

The priority is the pair (conflicts so far, t + BFS distance to the goal),
compared lexicographically; the distance is exact on the static grid, so it is
a consistent heuristic for the second component. Reaching the goal at time t
pushes a terminal node whose cost adds the conflicts the robot would suffer by
parking there (later visits by others); the first terminal popped is optimal.
After ``t_static`` the table no longer changes with time, so all later times
of one cell collapse into one search node: the search is finite without a
hand-tuned horizon.
"""

from __future__ import annotations

import bisect
import heapq
import time

from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.occupancy import Path
from tasks.routing.reservations import Reservations


def plan_path(
    grid: Grid,
    start: int,
    goal: int,
    table: Reservations,
    max_len: int,
    deadline: float | None = None,
    expansions: int = 200_000,
) -> tuple[Path, int] | None:
    """The best (conflicts, arrival) path from start to goal, or None (unreachable / out of budget)."""
    h = grid.distances(goal)
    if h[start] == UNREACHABLE:
        return None
    n = grid.n_cells
    moves = grid._moves
    vert, edge, park = table.vert, table.edge, table.park
    cap = table.t_static + 1
    goal_visits = sorted(table.visits.get(goal, ()))
    big = 1 << 60
    heap: list[tuple[int, int, int, int, int, int, int]] = [(0, h[start], 0, 0, start, -1, 0)]
    # (conflicts, f, -t, seq, cell, parent key, terminal flag)
    parent: dict[int, int] = {}
    best_conf: dict[int, int] = {}
    seq = 0
    pops = 0
    push = heapq.heappush
    pop = heapq.heappop
    while heap:
        conf, f, negt, _, cell, pkey, terminal = pop(heap)
        t = -negt
        if terminal:
            return unwind(parent, cell, pkey, n), conf
        key = (t if t < cap else cap) * n + cell
        if key in parent:
            continue
        parent[key] = pkey
        pops += 1
        if pops % 2048 == 0 and (
            pops > expansions or (deadline is not None and time.perf_counter() > deadline)
        ):
            return None
        if cell == goal:
            # parking here from t on meets every later visit by another robot
            future = len(goal_visits) - bisect.bisect_right(goal_visits, t)
            seq += 1
            push(heap, (conf + future, t, negt, seq, cell, parent[key], 1))
        nt = t + 1
        if nt > max_len:
            continue
        base_v = nt * n
        base_e = t * n
        for nb in moves[cell]:
            nkey = (nt if nt < cap else cap) * n + nb
            if nkey in parent:
                continue
            c = conf + vert.get(base_v + nb, 0)
            if park.get(nb, big) <= nt:
                c += 1
            if nb != cell:
                c += edge.get((base_e + nb) * n + cell, 0)
            seen = best_conf.get(nkey)
            if seen is not None and seen <= c and nt < cap:
                continue
            best_conf[nkey] = c if seen is None or c < seen else seen
            seq += 1
            push(heap, (c, nt + h[nb], -nt, seq, nb, key, 0))
    return None


def unwind(parent: dict[int, int], cell: int, key: int, n: int) -> Path:
    """The path ending at ``cell`` from the search's parent keys (time * n + cell), without the trailing
    waits a collapsed goal node may have produced."""
    path = [cell]
    while key >= 0:
        path.append(key % n)
        key = parent[key]
    path.reverse()
    while len(path) > 1 and path[-1] == path[-2]:
        path.pop()
    return tuple(path)
