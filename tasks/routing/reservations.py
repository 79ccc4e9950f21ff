"""The agent-side reservation table: other robots' space-time cells, as counts.

Built from a contract (robot identities are not needed by the planner, only
how many robots are where), and updated in place while a proposer re-plans a
neighbourhood: paths are added and removed as the LNS moves robots around.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tasks.routing.occupancy import Path


@dataclass
class Reservations:
    n: int
    vert: dict[int, int] = field(default_factory=dict)
    """t*n + cell -> robots moving through the cell at time t."""
    edge: dict[int, int] = field(default_factory=dict)
    """(t*n + a)*n + b -> robots stepping a -> b between t and t+1."""
    park: dict[int, int] = field(default_factory=dict)
    """cell -> time from which a robot is parked there for good."""
    visits: dict[int, list[int]] = field(default_factory=dict)
    """cell -> times of moving visits (conflicts with a robot that parks there later)."""
    t_static: int = 0
    """No moving reservation at or after t_static + 1: the table is time-invariant from there."""
    intervals: dict[int, tuple[list[tuple[int, int]], list[int]]] = field(default_factory=dict)
    """cell -> its safe intervals and their ends, filled by SIPP and dropped for the cells a path change
    touches, so successive searches against a slowly changing table (prioritized planning, LNS) share them."""
    saved: dict[int, tuple[list[tuple[int, int]], list[int]] | None] | None = None
    """Since ``checkpoint``: each changed cell's cached intervals as they were before its first change."""

    def checkpoint(self) -> None:
        """Start a trial whose changes may all be undone: ``rollback`` then keeps the cached intervals that
        were valid before it (an LNS step turned down would otherwise flush the cache along its paths)."""
        self.saved = {}

    def rollback(self) -> None:
        """End a trial whose changes were undone (the caller took out what it added and put back what it
        took out): the cells it changed get their intervals from before it back. An interval cached since
        a cell's last change is valid as it is: the undo touched the same cells, dropping the others."""
        saved, self.saved = self.saved, None
        for c, entry in (saved or {}).items():
            if entry is not None:
                self.intervals[c] = entry

    def release(self) -> None:
        """End a trial whose changes stay."""
        self.saved = None

    def add_run(self, t0: int, cells: list[int], arrives: bool = False) -> None:
        """Occupy ``cells`` at times t0, t0+1, ... (a clipped piece of another robot's path).

        With ``arrives`` the last cell is the robot's goal, reached at that time
        and occupied for good from then on.
        """
        n, vert, edge, visits = self.n, self.vert, self.edge, self.visits
        self._forget(cells)
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
            if arrival > self.t_static:
                self.t_static = arrival

    def remove_run(self, t0: int, cells: list[int], arrives: bool = False) -> None:
        """Undo ``add_run`` with the same arguments (``t_static`` stays: an upper bound is still right)."""
        n, vert, edge, visits = self.n, self.vert, self.edge, self.visits
        self._forget(cells)
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

    def add_path(self, path: Path) -> None:
        """``add_run(0, path, arrives=True)`` without its copy and branches (one call per LNS re-plan)."""
        n, vert, edge, visits = self.n, self.vert, self.edge, self.visits
        self._forget(path)
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
        if last > self.t_static:
            self.t_static = last
        self.park[path[last]] = last

    def copy(self) -> Reservations:
        """An independent table with the same reservations (the interval cache starts empty)."""
        return Reservations(
            self.n,
            dict(self.vert),
            dict(self.edge),
            dict(self.park),
            {c: list(v) for c, v in self.visits.items()},
            self.t_static,
        )

    def _forget(self, cells: Path | list[int]) -> None:
        saved = self.saved
        if saved is not None:
            drop = self.intervals.pop
            for c in cells:
                if c in saved:
                    drop(c, None)
                else:
                    saved[c] = drop(c, None)
        elif self.intervals:
            drop = self.intervals.pop
            for c in cells:
                drop(c, None)

    def remove_path(self, path: Path) -> None:
        n, vert, edge, visits = self.n, self.vert, self.edge, self.visits
        self._forget(path)
        last = len(path) - 1
        for t in range(last):
            c = path[t]
            k = t * n + c
            _decrement(vert, k)
            visits[c].remove(t)
            b = path[t + 1]
            if b != c:
                _decrement(edge, k * n + b)
        if self.park.get(path[last]) == last:
            del self.park[path[last]]

    def path_conflicts(self, path: Path) -> int:
        """Conflicts of one path (not in the table) with everything in the table."""
        n, vert, edge, park = self.n, self.vert, self.edge, self.park
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


def _decrement(counts: dict[int, int], key: int) -> None:
    """One fewer at ``key``; the key goes when none is left (lookups test membership)."""
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]
