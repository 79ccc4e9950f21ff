"""Space-time A* with soft reservations: one search, two priorities.

A node is (t, cell); stepping into a cell costs 1 plus ``penalty`` per conflict
met there (a vertex, a swap, or a robot parked there for good). The priority is
arrival + ``penalty`` x conflicts + BFS distance to the goal, which is exact on
the static grid, so a consistent heuristic.

- ``penalty=None`` (``plan_path``'s default): the penalty exceeds any arrival
  time, so the order is lexicographic, fewest conflicts first, then earliest
  arrival (the exact reference and the SIPP tests use this).
- a small ``penalty`` (``repair.soft_path``, LNS2's collision-minimizing
  repair): a detour of up to ``penalty`` steps is worth one conflict; the
  search stays about as small as a shortest-path search instead of exhausting
  every collision-free state first, which is what made the lexicographic search
  time out at density.

Reaching the goal at time t pushes a terminal node whose cost adds the
conflicts the robot would suffer by parking there (later visits by others);
the first terminal popped is optimal. After ``t_static`` the table no longer
changes with time, so all later times of one cell collapse into one search
node: the search is finite without a hand-tuned horizon.
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
    penalty: int | None = None,
) -> tuple[Path, int] | None:
    """The path minimizing arrival + ``penalty`` x conflicts (None: (conflicts, arrival) in that order),
    as (path, conflicts); None when the goal is unreachable or the budget is spent."""
    h = grid.distances(goal)
    if h[start] == UNREACHABLE:
        return None
    n = grid.n_cells
    # any f = t + h is below max_len + n + 1: a conflict outweighs every arrival, hence lexicographic
    weight = max_len + n + 1 if penalty is None else penalty
    moves = grid._moves
    vert, edge, park = table.vert, table.edge, table.park
    cap = table.t_static + 1
    goal_visits = sorted(table.visits.get(goal, ()))
    big = 1 << 60
    # (f, conflicts, -t, seq, cell, parent key, terminal); g = f - h = t + weight x conflicts
    heap: list[tuple[int, int, int, int, int, int, int]] = [(h[start], 0, 0, 0, start, -1, 0)]
    parent: dict[int, int] = {}
    best_g: dict[int, int] = {}
    seq = pops = 0
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        f, conf, negt, _, cell, pkey, terminal = pop(heap)
        t = -negt
        if terminal:
            return unwind(parent, cell, pkey, n), conf
        key = (t if t < cap else cap) * n + cell
        if key in parent:
            continue
        parent[key] = pkey
        pops += 1
        if pops % 1024 == 0 and (
            pops > expansions or (deadline is not None and time.perf_counter() > deadline)
        ):
            return None
        g = f - h[cell]
        if cell == goal:
            # parking here from t on meets every later visit by another robot
            later = len(goal_visits) - bisect.bisect_right(goal_visits, t)
            seq += 1
            push(heap, (g + weight * later, conf + later, negt, seq, cell, pkey, 1))
        nt = t + 1
        if nt > max_len:
            continue
        base_v = nt * n
        base_e = t * n
        for nb in moves[cell]:
            nkey = (nt if nt < cap else cap) * n + nb
            if nkey in parent:
                continue
            c = vert.get(base_v + nb, 0)
            if park.get(nb, big) <= nt:
                c += 1
            if nb != cell:
                c += edge.get((base_e + nb) * n + cell, 0)
            ng = g + 1 + weight * c
            seen = best_g.get(nkey)
            if seen is not None and seen <= ng:
                continue  # at the collapsed time too: same cell, same future, no worse (t, conflicts)
            best_g[nkey] = ng
            seq += 1
            push(heap, (ng + h[nb], conf + c, -nt, seq, nb, key, 0))
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
