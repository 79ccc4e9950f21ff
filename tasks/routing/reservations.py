"""The agent-side reservation table: other robots' space-time cells, as counts.

Built from a contract (robot identities are not needed by the planner, only
how many robots are where), and updated in place while a proposer re-plans a
neighbourhood: paths are added and removed as the LNS moves robots around.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tasks.routing.occupancy import Path
from tasks.routing.sipp_jit import apply_run, direction, path_conflicts_of


@dataclass
class TableArrays:
    """The table as arrays for the compiled SIPP (``sipp_jit``): kept in step with the dicts once made."""

    width: int
    occupied: np.ndarray
    """[cell, t] -> robots moving through the cell at time t."""
    stepping: np.ndarray
    """[cell, t, direction] -> robots stepping out of the cell that way between t and t+1."""
    parked: np.ndarray
    """[cell] -> time from which a robot is parked there for good, or -1."""
    latest: np.ndarray
    """[cell] -> no robot moves through the cell after this time (-1: none ever did); SIPP reads a cell's
    timeline up to there instead of up to the table's last time."""

    @classmethod
    def of(cls, table: Reservations, width: int) -> TableArrays:
        n = table.n
        horizon = max(64, table.t_static + 2)
        arrays = cls(width, np.zeros((n, horizon), np.int16), np.zeros((n, horizon, 4), np.int16),
                     np.full(n, -1, np.int64), np.full(n, -1, np.int64))  # fmt: skip
        if table.vert:
            keys = np.fromiter(table.vert, np.int64, len(table.vert))
            cells, times = keys % n, keys // n
            arrays.occupied[cells, times] = np.fromiter(table.vert.values(), np.int64, len(table.vert))
            np.maximum.at(arrays.latest, cells, times)
        for key, count in table.edge.items():
            tk, b = divmod(key, n)
            t, a = divmod(tk, n)
            arrays.stepping[a, t, direction(a, b, width)] = count
        for cell, t in table.park.items():
            arrays.parked[cell] = t
        return arrays

    def copy(self) -> TableArrays:
        return TableArrays(
            self.width, self.occupied.copy(), self.stepping.copy(), self.parked.copy(), self.latest.copy()
        )

    def apply(self, t0: int, cells: Path | list[int], arrives: bool, sign: int) -> None:
        end = t0 + len(cells)
        if end > self.occupied.shape[1]:
            self._widen(2 * end)
        cells_array = np.asarray(cells, np.int64)
        apply_run(self.occupied, self.stepping, self.latest, t0, cells_array, arrives, self.width, sign)

    def _widen(self, horizon: int) -> None:
        n, old = self.occupied.shape
        occupied = np.zeros((n, horizon), np.int16)
        occupied[:, :old] = self.occupied
        stepping = np.zeros((n, horizon, 4), np.int16)
        stepping[:, :old] = self.stepping
        self.occupied, self.stepping = occupied, stepping


@dataclass
class Reservations:
    """Once a compiled search made the array mirror, ``add_path`` and ``remove_path`` change only the mirror
    and defer the dicts: an LNS step moves a dozen paths out and in, and most steps are turned down and
    moved back, so the dicts get the net change when something reads them (``vert``, ``edge``, ``park``,
    ``visits``, ``copy``), or never; ``path_conflicts`` reads the mirror."""

    n: int
    _vert: dict[int, int] = field(default_factory=dict)
    _edge: dict[int, int] = field(default_factory=dict)
    _park: dict[int, int] = field(default_factory=dict)
    _visits: dict[int, list[int]] = field(default_factory=dict)
    t_static: int = 0
    """No moving reservation at or after t_static + 1: the table is time-invariant from there."""
    mirror: TableArrays | None = None
    """The table as arrays, made by the first compiled SIPP search against it (``arrays``)."""
    deferred: dict[Path, int] = field(default_factory=dict)
    """Whole paths added (count > 0) or removed (< 0) since the dicts were last brought up to date."""

    @property
    def vert(self) -> dict[int, int]:
        """t*n + cell -> robots moving through the cell at time t."""
        if self.deferred:
            self._settle()
        return self._vert

    @property
    def edge(self) -> dict[int, int]:
        """(t*n + a)*n + b -> robots stepping a -> b between t and t+1."""
        if self.deferred:
            self._settle()
        return self._edge

    @property
    def park(self) -> dict[int, int]:
        """cell -> time from which a robot is parked there for good."""
        if self.deferred:
            self._settle()
        return self._park

    @property
    def visits(self) -> dict[int, list[int]]:
        """cell -> times of moving visits (conflicts with a robot that parks there later)."""
        if self.deferred:
            self._settle()
        return self._visits

    def _settle(self) -> None:
        """Bring the dicts up to date: the paths gone first, then those that came (a goal's parking time is
        the last writer's, and a path gone was there before any path that came)."""
        deferred, self.deferred = self.deferred, {}
        for path, count in deferred.items():
            for _ in range(-count):
                self._remove_from_dicts(path)
        for path, count in deferred.items():
            for _ in range(count):
                self._add_to_dicts(path)

    def _defer(self, path: Path, change: int) -> None:
        key = path if isinstance(path, tuple) else tuple(path)
        left = self.deferred.get(key, 0) + change
        if left:
            self.deferred[key] = left
        else:
            del self.deferred[key]

    def arrays(self, width: int) -> TableArrays:
        """The array mirror of this table (made now if it has none yet, then kept up to date)."""
        if self.mirror is None:
            self.mirror = TableArrays.of(self, width)
        return self.mirror

    def add_run(self, t0: int, cells: list[int], arrives: bool = False) -> None:
        """Occupy ``cells`` at times t0, t0+1, ... (a clipped piece of another robot's path).

        With ``arrives`` the last cell is the robot's goal, reached at that time
        and occupied for good from then on.
        """
        n, vert, edge, visits = self.n, self.vert, self.edge, self.visits
        if self.mirror is not None:
            self.mirror.apply(t0, cells, arrives, 1)
        moving = cells[:-1] if arrives else cells
        prev = -1
        t = t0 - 1
        for t, c in enumerate(moving, t0):
            k = t * n + c
            vert[k] = vert.get(k, 0) + 1
            visits.setdefault(c, []).append(t)
            if prev >= 0 and prev != c:
                ek = ((t - 1) * n + prev) * n + c
                edge[ek] = edge.get(ek, 0) + 1
            prev = c
        if t + 1 > self.t_static:
            self.t_static = t + 1
        if arrives:
            goal = cells[-1]
            arrival = t0 + len(cells) - 1
            if prev >= 0 and prev != goal:
                ek = ((arrival - 1) * n + prev) * n + goal
                edge[ek] = edge.get(ek, 0) + 1
            self.park[goal] = arrival
            if self.mirror is not None:
                self.mirror.parked[goal] = arrival
            if arrival > self.t_static:
                self.t_static = arrival

    def remove_run(self, t0: int, cells: list[int], arrives: bool = False) -> None:
        """Undo ``add_run`` with the same arguments (``t_static`` stays: an upper bound is still right)."""
        n, vert, edge, visits = self.n, self.vert, self.edge, self.visits
        if self.mirror is not None:
            self.mirror.apply(t0, cells, arrives, -1)
        moving = cells[:-1] if arrives else cells
        prev = -1
        for t, c in enumerate(moving, t0):
            k = t * n + c
            _decrement(vert, k)
            visits[c].remove(t)
            if prev >= 0 and prev != c:
                _decrement(edge, ((t - 1) * n + prev) * n + c)
            prev = c
        if arrives:
            goal = cells[-1]
            arrival = t0 + len(cells) - 1
            if prev >= 0 and prev != goal:
                _decrement(edge, ((arrival - 1) * n + prev) * n + goal)
            if self.park.get(goal) == arrival:
                del self.park[goal]
                if self.mirror is not None:
                    self.mirror.parked[goal] = -1

    def add_path(self, path: Path) -> None:
        """``add_run(0, path, arrives=True)`` without its copy and branches (one call per LNS re-plan)."""
        last = len(path) - 1
        if last > self.t_static:
            self.t_static = last
        mirror = self.mirror
        if mirror is None:
            self._add_to_dicts(path)
            return
        mirror.apply(0, path, True, 1)
        mirror.parked[path[last]] = last
        self._defer(path, 1)

    def remove_path(self, path: Path) -> None:
        last = len(path) - 1
        mirror = self.mirror
        if mirror is None:
            self._remove_from_dicts(path)
            return
        mirror.apply(0, path, True, -1)
        if mirror.parked[path[last]] == last:
            mirror.parked[path[last]] = -1
        self._defer(path, -1)

    def _add_to_dicts(self, path: Path) -> None:
        n, vert, edge, visits = self.n, self._vert, self._edge, self._visits
        last = len(path) - 1
        for t in range(last):
            c = path[t]
            k = t * n + c
            vert[k] = vert.get(k, 0) + 1
            seen = visits.get(c)
            if seen is None:
                visits[c] = [t]
            else:
                seen.append(t)
            b = path[t + 1]
            if b != c:
                ek = k * n + b
                edge[ek] = edge.get(ek, 0) + 1
        self._park[path[last]] = last

    def copy(self) -> Reservations:
        """An independent table with the same reservations (and its own array mirror, if this has one)."""
        return Reservations(
            self.n,
            dict(self.vert),
            dict(self.edge),
            dict(self.park),
            {c: list(v) for c, v in self.visits.items()},
            self.t_static,
            mirror=None if self.mirror is None else self.mirror.copy(),
        )

    def _remove_from_dicts(self, path: Path) -> None:
        n, vert, edge, visits = self.n, self._vert, self._edge, self._visits
        last = len(path) - 1
        for t in range(last):  # _decrement inlined: one call per step of every path the LNS moves
            c = path[t]
            k = t * n + c
            left = vert[k] - 1
            if left:
                vert[k] = left
            else:
                del vert[k]
            visits[c].remove(t)
            b = path[t + 1]
            if b != c:
                ek = k * n + b
                left = edge[ek] - 1
                if left:
                    edge[ek] = left
                else:
                    del edge[ek]
        if self._park.get(path[last]) == last:
            del self._park[path[last]]

    def path_conflicts(self, path: Path) -> int:
        """Conflicts of one path (not in the table) with everything in the table (off the array mirror where
        there is one: the dicts' deferred changes stay deferred)."""
        mirror = self.mirror
        if mirror is not None:
            return int(path_conflicts_of(
                mirror.occupied, mirror.stepping, mirror.parked, mirror.latest, np.asarray(path, np.int64),
                mirror.width,
            ))  # fmt: skip
        n, vert, edge, park = self.n, self.vert, self.edge, self.park
        if not vert and not park:  # a whole-plan lease's table holds nobody: every search step asks
            return 0
        total = 0
        last = len(path) - 1
        for t in range(last):
            c = path[t]
            total += vert.get(t * n + c, 0)
            pk = park.get(c)
            if pk is not None and pk <= t:
                total += 1
            b = path[t + 1]
            if b != c:
                total += edge.get((t * n + b) * n + c, 0)
        g = path[last]
        total += sum(1 for t in self.visits.get(g, ()) if t >= last)
        return total

    def path_conflicts_without(self, path: Path, held: Path) -> int:
        """``path_conflicts(path)`` on this table less ``held``, a path it holds (another path of the same
        robot, whose goal no other robot has), without taking ``held`` out and putting it back: the counts
        add up path by path, so ``held``'s own share (``pair_conflicts``) comes off. ``BlockSearch.adopt``
        asked this for every robot a team agent's walk had moved (83 an answer at 16 agents, k = 300), and
        taking each out and back in was most of its cost (docs/notes/2026-12-07-agent-overheads.md)."""
        return self.path_conflicts(path) - pair_conflicts(self.n, path, held)


def pair_conflicts(n: int, path: Path, other: Path) -> int:
    """``path_conflicts(path)`` against a table that holds only ``other`` (every rule of it, one path)."""
    last, other_last = len(path) - 1, len(other) - 1
    goal = other[other_last]
    total = 0
    for t in range(last):
        c = path[t]
        if t < other_last and other[t] == c:  # both in c at t
            total += 1
        if c == goal and other_last <= t:  # c is where ``other`` is parked by then
            total += 1
        b = path[t + 1]
        if b != c and t < other_last and other[t] == b and other[t + 1] == c:  # a swap
            total += 1
    g = path[last]
    return total + sum(1 for t in range(last, other_last) if other[t] == g)  # moving through g once parked


def _decrement(counts: dict[int, int], key: int) -> None:
    """One fewer at ``key``; the key goes when none is left (lookups test membership)."""
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]
