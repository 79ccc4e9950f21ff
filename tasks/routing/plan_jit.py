"""The coordinator's counts, compiled: an answer's paths scored and settled on the plan's count arrays.

The same arrays as the agents' SIPP (``sipp_jit``: ``occupied``, ``stepping``, ``parked``, ``latest``),
held for the plan the coordinator scores on (``plan_mirror.py``). Paths come concatenated with the end of
each. Each kernel leaves the table as it found it and runs in one call, so no other thread sees it in
between (a compiled call holds the interpreter lock).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tasks.routing.sipp_jit import apply_run, path_conflicts_of


@njit(cache=True)
def _move_path(
    occupied: np.ndarray, stepping: np.ndarray, parked: np.ndarray, latest: np.ndarray, path: np.ndarray,
    width: int, sign: int,
) -> None:  # fmt: skip
    """A whole path (from t = 0, parked at its goal) into the table (sign 1) or out of it (-1)."""
    last = len(path) - 1
    apply_run(occupied, stepping, latest, 0, path, True, width, sign)
    if sign > 0:
        parked[path[last]] = last
    elif parked[path[last]] == last:
        parked[path[last]] = -1


@njit(cache=True)
def scan_paths(
    occupied: np.ndarray, stepping: np.ndarray, parked: np.ndarray, latest: np.ndarray, width: int,
    removed: np.ndarray, removed_ends: np.ndarray, probes: np.ndarray, probe_ends: np.ndarray,
    outside: np.ndarray, inside: np.ndarray,
) -> None:  # fmt: skip
    """Each probe path's conflicts with the table less the ``removed`` paths (``outside``) and with the other
    probes (``inside``), the paths given concatenated with their ends; the table is left as it was. One call,
    so no other thread sees the table in between (it holds the interpreter lock). The coordinator's scoring of
    an answer: the new paths against the plan without the paths they replace (``occupancy.scan_change``).
    The horizon must hold the longest path (the caller widens it)."""
    start = 0
    for i in range(len(removed_ends)):
        _move_path(occupied, stepping, parked, latest, removed[start : removed_ends[i]], width, -1)
        start = removed_ends[i]
    start = 0
    for i in range(len(probe_ends)):
        path = probes[start : probe_ends[i]]
        outside[i] = path_conflicts_of(occupied, stepping, parked, latest, path, width)
        start = probe_ends[i]
    start = 0
    for i in range(len(probe_ends)):
        _move_path(occupied, stepping, parked, latest, probes[start : probe_ends[i]], width, 1)
        start = probe_ends[i]
    start = 0
    for i in range(len(probe_ends)):  # each against all the others: out, counted, back in
        path = probes[start : probe_ends[i]]
        _move_path(occupied, stepping, parked, latest, path, width, -1)
        inside[i] = path_conflicts_of(occupied, stepping, parked, latest, path, width) - outside[i]
        _move_path(occupied, stepping, parked, latest, path, width, 1)
        start = probe_ends[i]
    start = 0
    for i in range(len(probe_ends)):
        _move_path(occupied, stepping, parked, latest, probes[start : probe_ends[i]], width, -1)
        start = probe_ends[i]
    start = 0
    for i in range(len(removed_ends)):
        _move_path(occupied, stepping, parked, latest, removed[start : removed_ends[i]], width, 1)
        start = removed_ends[i]


@njit(cache=True)
def _nth(paths: np.ndarray, ends: np.ndarray, i: int) -> np.ndarray:
    """Path ``i`` of paths given concatenated with the end of each."""
    return paths[(0 if i == 0 else ends[i - 1]) : ends[i]]


@njit(cache=True)
def keep_fitting(
    occupied: np.ndarray, stepping: np.ndarray, parked: np.ndarray, latest: np.ndarray, width: int,
    current: np.ndarray, current_ends: np.ndarray, written: np.ndarray, written_ends: np.ndarray,
    outside: np.ndarray, inside: np.ndarray, dearest_first: np.ndarray, kept: np.ndarray,
) -> bool:  # fmt: skip
    """``rebase.keep_what_fits`` off the plan's table, for an answer ``scan_paths`` counted on it: robot i's
    path in the plan is ``current``'s i-th, its new one ``written``'s; ``kept[i]`` is set to whether the
    new one stays. Returns whether any collided. The table is left as it was."""
    n = len(written_ends)
    for i in range(n):
        _move_path(occupied, stepping, parked, latest, _nth(current, current_ends, i), width, -1)
    back = np.zeros(n, np.bool_)  # the robot's current path is in the table again
    collided = _put_back_colliding(
        occupied, stepping, parked, latest, width, current, current_ends, written, written_ends,
        outside, inside, kept, back,
    )  # fmt: skip
    _put_back_dearer(
        occupied, stepping, parked, latest, width, current, current_ends, written, written_ends,
        dearest_first, kept,
    )  # fmt: skip
    for i in range(n):  # the new paths out first: a robot's two paths end at one goal, parked once
        if kept[i]:
            _move_path(occupied, stepping, parked, latest, _nth(written, written_ends, i), width, -1)
    for i in range(n):
        if not back[i]:
            _move_path(occupied, stepping, parked, latest, _nth(current, current_ends, i), width, 1)
    return collided


@njit(cache=True)
def _put_back_colliding(
    occupied: np.ndarray, stepping: np.ndarray, parked: np.ndarray, latest: np.ndarray, width: int,
    current: np.ndarray, current_ends: np.ndarray, written: np.ndarray, written_ends: np.ndarray,
    outside: np.ndarray, inside: np.ndarray, kept: np.ndarray, back: np.ndarray,
) -> bool:  # fmt: skip
    """The new paths that collide go back (their current paths into the table), then, pass by pass, those
    that collide with a path just put back: a count against the plan less the robots' paths plus the paths
    put back, above ``outside``. Whether any collided."""
    n = len(written_ends)
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
                _move_path(occupied, stepping, parked, latest, _nth(current, current_ends, i), width, 1)
        going = False
        for i in range(n):
            mine = _nth(written, written_ends, i)
            if kept[i] and path_conflicts_of(occupied, stepping, parked, latest, mine, width) > outside[i]:
                colliding[i] = going = True
    return collided


@njit(cache=True)
def _put_back_dearer(
    occupied: np.ndarray, stepping: np.ndarray, parked: np.ndarray, latest: np.ndarray, width: int,
    current: np.ndarray, current_ends: np.ndarray, written: np.ndarray, written_ends: np.ndarray,
    dearest_first: np.ndarray, kept: np.ndarray,
) -> None:  # fmt: skip
    """In ``dearest_first`` order while a kept new path costs more than the robot's current one, the robot
    goes back where its current path fits beside the other new paths kept (a count against the table with
    them equal to one without). Leaves the kept new paths in the table."""
    n = len(written_ends)
    fitting = np.zeros(n, np.int64)
    for i in range(n):
        if kept[i]:
            fitting[i] = path_conflicts_of(
                occupied, stepping, parked, latest, _nth(current, current_ends, i), width
            )
    for i in range(n):
        if kept[i]:
            _move_path(occupied, stepping, parked, latest, _nth(written, written_ends, i), width, 1)
    for j in range(n):
        i = dearest_first[j]
        if not kept[i]:
            continue
        mine, was = _nth(written, written_ends, i), _nth(current, current_ends, i)
        if len(mine) <= len(was):
            break
        _move_path(occupied, stepping, parked, latest, mine, width, -1)
        if path_conflicts_of(occupied, stepping, parked, latest, was, width) == fitting[i]:
            kept[i] = False
        else:
            _move_path(occupied, stepping, parked, latest, mine, width, 1)


def warm_counts() -> None:
    """Compile these kernels now, or load them from numba's on-disk cache (``sipp_jit.warm``'s reason)."""
    occupied = np.zeros((2, 4), np.int16)
    stepping = np.zeros((2, 4, 4), np.int16)
    latest = np.full(2, -1, np.int64)
    parked = np.full(2, -1, np.int64)
    one, ends = np.array([1, 0], np.int64), np.array([2], np.int64)
    counts = np.zeros(1, np.int64)
    apply_run(occupied, stepping, latest, 0, one, True, 2, 1)
    scan_paths(occupied, stepping, parked, latest, 2, one, ends, one, ends, counts, counts.copy())
    kept = np.zeros(1, np.bool_)
    keep_fitting(occupied, stepping, parked, latest, 2, one, ends, one, ends, counts, counts, counts, kept)
