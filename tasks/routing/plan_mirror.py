"""The coordinator's plan as count arrays, so that scoring an answer runs compiled (``plan_jit``).

Scoring an answer on the occupancy index walked each new path through Python dicts and built an index of
the new paths to count their conflicts among themselves: a quarter of the coordinator's CPU with 16 agents
at k = 300 (docs/notes/2026-12-07-coordinator-scan.md). The agents' searches already count off array
mirrors (``reservations.TableArrays``); this is the same table for the plan the coordinator scores on. It
follows whichever plan it is asked about, path by path (a commit changes a few dozen of 300), and one
lock keeps two threads from moving it at once.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from tasks.routing.occupancy import ChangeScan, Path
from tasks.routing.plan_jit import Paths, Table, keep_fitting, move_path, scan_paths


class PlanMirror:
    """Counts of who is where when in one plan (``sipp_jit``'s arrays, ``plan_jit``'s kernels), moved to the
    next plan asked about."""

    def __init__(self, n_cells: int, width: int) -> None:
        self.n_cells, self.width = n_cells, width
        self._paths: Sequence[Path] | None = None
        # no horizon until first used: every process that builds the task has a mirror, an agent's unused
        self._occupied = np.zeros((n_cells, 0), np.int16)
        self._stepping = np.zeros((n_cells, 0, 4), np.int16)
        self._parked = np.full(n_cells, -1, np.int64)
        self._latest = np.full(n_cells, -1, np.int64)
        self._lock = threading.Lock()

    def scan(
        self, paths: Sequence[Path], old: Mapping[int, Path], new: Mapping[int, Path]
    ) -> tuple[dict[int, int], dict[int, int]]:
        """For each robot of ``new`` (the robots of ``old``, whose paths in ``paths`` they replace): its new
        path's conflicts with the plan's other robots, and with the other new paths (``scan_change``'s)."""
        removed, probes = _concatenated(old.values()), _concatenated(new.values())
        outside = np.zeros(len(new), np.int64)
        inside = np.zeros(len(new), np.int64)
        longest = max((len(p) for p in (*old.values(), *new.values())), default=1)
        with self._lock:
            self._follow(paths)
            self._widen(longest)
            scan_paths(self._table(), removed, probes, outside, inside)
        robots = list(new)
        return (
            dict(zip(robots, outside.tolist(), strict=True)),
            dict(zip(robots, inside.tolist(), strict=True)),
        )

    def keep_what_fits(
        self, paths: Sequence[Path], written: Mapping[int, Path], scan: ChangeScan
    ) -> tuple[dict[int, Path], bool]:
        """``rebase.keep_what_fits(index, paths, written, scan)`` compiled (``plan_jit.keep_fitting``): the
        written paths that fit the plan as it is, and whether any collided. ``scan`` is this mirror's of the
        same change (its robots those of ``written``)."""
        robots = list(written)
        current, new = _concatenated(paths[r] for r in robots), _concatenated(written.values())
        outside = np.fromiter((scan.outside[r] for r in robots), np.int64, len(robots))
        inside = np.fromiter((scan.inside[r] for r in robots), np.int64, len(robots))
        order = sorted(range(len(robots)), key=lambda i: len(paths[robots[i]]) - len(written[robots[i]]))
        kept = np.zeros(len(robots), np.bool_)
        longest = max((len(p) for p in written.values()), default=1)
        with self._lock:
            self._follow(paths)
            self._widen(longest)
            dearest_first = np.asarray(order, np.int64)
            collided = keep_fitting(self._table(), current, new, outside, inside, dearest_first, kept)
        return {r: written[r] for r, keep in zip(robots, kept.tolist(), strict=True) if keep}, bool(collided)

    def _table(self) -> Table:
        return self._occupied, self._stepping, self._parked, self._latest, self.width

    def _follow(self, paths: Sequence[Path]) -> None:
        """Become ``paths``: from scratch the first time (or for another number of robots), else only the
        paths that differ (a plan shares its unchanged paths with the plan it came from)."""
        before = self._paths
        if before is paths:
            return
        if before is None or len(before) != len(paths):
            self._occupied[:] = 0
            self._stepping[:] = 0
            self._parked[:] = -1
            self._latest[:] = -1
            for p in paths:
                self._move(p, 1)
        else:
            for was, now in zip(before, paths, strict=True):
                if was is not now and was != now:
                    self._move(was, -1)
                    self._move(now, 1)
        self._paths = paths

    def _move(self, path: Path, sign: int) -> None:
        self._widen(len(path))
        move_path(self._table(), np.asarray(path, np.int64), sign)

    def _widen(self, length: int) -> None:
        """A horizon that holds a path of ``length`` cells (the kernels do not check bounds)."""
        old = self._occupied.shape[1]
        if length <= old:
            return
        horizon = max(2 * old, length, 64)
        occupied = np.zeros((self.n_cells, horizon), np.int16)
        occupied[:, :old] = self._occupied
        stepping = np.zeros((self.n_cells, horizon, 4), np.int16)
        stepping[:, :old] = self._stepping
        self._occupied, self._stepping = occupied, stepping


def _concatenated(paths: Iterable[Path]) -> Paths:
    """Paths as one array of cells and the end of each."""
    listed = list(paths)
    ends = np.cumsum([len(p) for p in listed], dtype=np.int64)
    cells = np.fromiter(itertools.chain.from_iterable(listed), np.int64, int(ends[-1]) if len(ends) else 0)
    return cells, ends
