"""The coordinator's counts, compiled: an answer's paths scored and settled on the plan's count arrays.

The same arrays as the agents' SIPP (``sipp_jit``: ``occupied``, ``stepping``, ``parked``, ``latest``),
held for the plan the coordinator scores on (``plan_mirror.py``) and passed as one tuple with the grid's
width (``table``); a set of paths is a tuple of its cells concatenated and the end of each. Each kernel
leaves the table as it found it and runs in one call, so no other thread sees it in between (a compiled
call holds the interpreter lock).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tasks.routing.sipp_jit import apply_run, path_conflicts_of

Table = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]
"""``occupied``, ``stepping``, ``parked``, ``latest`` and the grid's width."""
Paths = tuple[np.ndarray, np.ndarray]
"""Paths' cells concatenated, and the end of each."""


@njit(cache=True)
def _nth(paths: Paths, i: int) -> np.ndarray:
    """Path ``i`` of a (cells, ends) set."""
    cells, ends = paths
    return cells[(0 if i == 0 else ends[i - 1]) : ends[i]]


@njit(cache=True)
def _count(table: Table, path: np.ndarray) -> int:
    """The path's conflicts with everything in the table (``sipp_jit.path_conflicts_of``)."""
    occupied, stepping, parked, latest, width = table
    return int(path_conflicts_of(occupied, stepping, parked, latest, path, width))


@njit(cache=True)
def move_path(table: Table, path: np.ndarray, sign: int) -> None:
    """A whole path (from t = 0, parked at its goal) into the table (sign 1) or out of it (-1)."""
    occupied, stepping, parked, latest, width = table
    last = len(path) - 1
    apply_run(occupied, stepping, latest, 0, path, True, width, sign)
    if sign > 0:
        parked[path[last]] = last
    elif parked[path[last]] == last:
        parked[path[last]] = -1


@njit(cache=True)
def scan_paths(table: Table, removed: Paths, probes: Paths, outside: np.ndarray, inside: np.ndarray) -> None:
    """Each probe path's conflicts with the table less the ``removed`` paths (``outside``) and with the other
    probes (``inside``); the table is left as it was. The coordinator's scoring of an answer: the new paths
    against the plan without the paths they replace (``occupancy.scan_change``). The horizon must hold the
    longest path (the caller widens it)."""
    for i in range(len(removed[1])):
        move_path(table, _nth(removed, i), -1)
    n = len(probes[1])
    for i in range(n):
        outside[i] = _count(table, _nth(probes, i))
    for i in range(n):
        move_path(table, _nth(probes, i), 1)
    for i in range(n):  # each against all the others: out, counted, back in
        path = _nth(probes, i)
        move_path(table, path, -1)
        inside[i] = _count(table, path) - outside[i]
        move_path(table, path, 1)
    for i in range(n):
        move_path(table, _nth(probes, i), -1)
    for i in range(len(removed[1])):
        move_path(table, _nth(removed, i), 1)


@njit(cache=True)
def keep_fitting(
    table: Table, current: Paths, written: Paths, outside: np.ndarray, inside: np.ndarray,
    dearest_first: np.ndarray, kept: np.ndarray,
) -> bool:  # fmt: skip
    """``rebase.keep_what_fits`` off the plan's table, for an answer ``scan_paths`` counted on it: robot i's
    path in the plan is ``current``'s i-th, its new one ``written``'s; ``kept[i]`` is set to whether the
    new one stays. Returns whether any collided. The table is left as it was."""
    n = len(written[1])
    for i in range(n):
        move_path(table, _nth(current, i), -1)
    back = np.zeros(n, np.bool_)  # the robot's current path is in the table again
    collided = _put_back_colliding(table, current, written, outside, inside, kept, back)
    _put_back_dearer(table, current, written, dearest_first, kept)
    for i in range(n):  # the new paths out first: a robot's two paths end at one goal, parked once
        if kept[i]:
            move_path(table, _nth(written, i), -1)
    for i in range(n):
        if not back[i]:
            move_path(table, _nth(current, i), 1)
    return collided


@njit(cache=True)
def _put_back_colliding(
    table: Table, current: Paths, written: Paths, outside: np.ndarray, inside: np.ndarray,
    kept: np.ndarray, back: np.ndarray,
) -> bool:  # fmt: skip
    """The new paths that collide go back (their current paths into the table), then, pass by pass, those
    that collide with a path just put back: a count against the plan less the robots' paths plus the paths
    put back, above ``outside``. Whether any collided."""
    n = len(written[1])
    colliding = np.zeros(n, np.bool_)
    collided = False
    for i in range(n):
        kept[i] = True
        if outside[i] > 0 or inside[i] > 0:
            colliding[i] = collided = True
    going = collided
    while going:
        for i in range(n):
            if colliding[i]:
                kept[i], back[i], colliding[i] = False, True, False
                move_path(table, _nth(current, i), 1)
        going = False
        for i in range(n):
            if kept[i] and _count(table, _nth(written, i)) > outside[i]:
                colliding[i] = going = True
    return collided


@njit(cache=True)
def _put_back_dearer(
    table: Table, current: Paths, written: Paths, dearest_first: np.ndarray, kept: np.ndarray
) -> None:
    """In ``dearest_first`` order while a kept new path costs more than the robot's current one, the robot
    goes back where its current path fits beside the other new paths kept (a count against the table with
    them equal to one without). Leaves the kept new paths in the table."""
    n = len(written[1])
    fitting = np.zeros(n, np.int64)
    for i in range(n):
        if kept[i]:
            fitting[i] = _count(table, _nth(current, i))
    for i in range(n):
        if kept[i]:
            move_path(table, _nth(written, i), 1)
    for j in range(n):
        i = dearest_first[j]
        if not kept[i]:
            continue
        mine, was = _nth(written, i), _nth(current, i)
        if len(mine) <= len(was):
            break
        move_path(table, mine, -1)
        if _count(table, was) == fitting[i]:
            kept[i] = False
        else:
            move_path(table, mine, 1)


def warm_counts() -> None:
    """Compile these kernels now, or load them from numba's on-disk cache (``sipp_jit.warm``'s reason)."""
    table = (np.zeros((2, 4), np.int16), np.zeros((2, 4, 4), np.int16), np.full(2, -1, np.int64),
             np.full(2, -1, np.int64), 2)  # fmt: skip
    one = (np.array([1, 0], np.int64), np.array([2], np.int64))
    counts = np.zeros(1, np.int64)
    move_path(table, one[0], 1)
    scan_paths(table, one, one, counts, counts.copy())
    keep_fitting(table, one, one, counts, counts, counts, np.zeros(1, np.bool_))
