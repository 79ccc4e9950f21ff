"""The space-time occupancy index and conflict counting (the scorer).

A path is a tuple of cells, trimmed so that it ends on its first arrival for
good at the goal: the robot moves during steps ``0..T-1`` (T = len - 1, its
cost) and is *parked* at the goal from time T on, forever.

Conflicts are counted per robot pair and time: a vertex conflict for two robots
in one cell at one time (a parked robot counts at every time after it arrived),
an edge conflict for two robots swapping cells in one step.

The index keys dicts by ints (``t * n + cell`` and ``(t * n + a) * n + b``) and
stores robot ids, so the conflicts of a few paths against everybody else cost
about the length of those paths: this is what makes scoring incremental.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

Path = tuple[int, ...]
_NONE: dict[int, tuple[int, ...]] = {}


def canonical(path: Iterable[int]) -> Path:
    """Drop the trailing waits at the goal: the robot parks there anyway."""
    p = list(path)
    while len(p) > 1 and p[-1] == p[-2]:
        p.pop()
    return tuple(p)


def cost(path: Path) -> int:
    return len(path) - 1


@dataclass
class OccupancyIndex:
    """Who is where when, robots by id."""

    n: int
    vert: dict[int, tuple[int, ...]]
    """t*n + cell -> robots moving through the cell at time t (t < their T)."""
    edge: dict[int, tuple[int, ...]]
    """(t*n + a)*n + b -> robots stepping a -> b (a != b) between t and t+1."""
    visits: dict[int, dict[int, tuple[int, ...]]]
    """cell -> robot -> the times it moves through the cell (to count conflicts with a robot parked there).
    Keyed by robot so that taking a path out costs one ``del`` per cell: a corridor cell of a dense map is
    visited by dozens of robots, and rebuilding its visits on every LNS step cost more than the SIPP
    searches themselves (warehouse k=200, one agent)."""
    park: dict[int, tuple[int, int]]
    """goal cell -> (robot, T): the robot occupies the cell at every t >= T."""
    owned: set[int] | None = field(default=None, compare=False, repr=False)
    """The cells whose inner visit dict is this index's own; None: every cell's. After ``copy`` both indexes
    share the inner dicts, and each copies a cell's dict the first time it changes it (copy on write)."""

    @classmethod
    def empty(cls, n: int) -> OccupancyIndex:
        return cls(n, {}, {}, {}, {})

    @classmethod
    def build(cls, n: int, paths: Mapping[int, Path]) -> OccupancyIndex:
        idx = cls.empty(n)
        for r, p in paths.items():
            idx.add(r, p)
        return idx

    def copy(self) -> OccupancyIndex:
        """An independent index: the tuples are shared, being immutable, and so are the inner visit dicts
        until either index changes one (``owned``). Copying every inner dict was a quarter of the
        coordinator's CPU per merge with 8 agents at 300 robots (``apply`` copies the head's index)."""
        self.owned = set()
        return OccupancyIndex(
            self.n, dict(self.vert), dict(self.edge), dict(self.visits), dict(self.park), set()
        )

    def _own(self, cell: int) -> dict[int, tuple[int, ...]]:
        """The inner visit dict of ``cell``, this index's own (copied now if it may be shared)."""
        mine = self.visits[cell]
        owned = self.owned
        if owned is not None and cell not in owned:
            mine = self.visits[cell] = dict(mine)
            owned.add(cell)
        return mine

    def add(self, robot: int, path: Path) -> None:
        """One pass over the path, with local lookups (``rebase.keep_what_fits`` indexes every path an
        answer writes)."""
        n, vert, edge, visits, owned = self.n, self.vert, self.edge, self.visits, self.owned
        vert_get, edge_get, visits_get = vert.get, edge.get, visits.get
        alone = (robot,)
        tn = 0
        c = path[0]
        for t, b in enumerate(path[1:]):
            k = tn + c
            here = vert_get(k)
            vert[k] = alone if here is None else here + alone
            if b != c:
                k = k * n + b
                here = edge_get(k)
                edge[k] = alone if here is None else here + alone
            mine = visits_get(c)
            if mine is None:
                visits[c] = {robot: (t,)}
                if owned is not None:
                    owned.add(c)
            else:
                if owned is not None and c not in owned:
                    mine = self._own(c)
                mine[robot] = mine.get(robot, ()) + (t,)
            tn += n
            c = b
        self.park[c] = (robot, len(path) - 1)

    def remove(self, robot: int, path: Path) -> None:
        vert, edge, visits = self.vert, self.edge, self.visits
        moves, steps = _keys(self.n, path)
        alone = (robot,)
        for table, keys in ((vert, moves), (edge, steps)):
            take = table.pop
            for k in keys:  # a robot is in a key at most once (the key holds the time)
                here = take(k)
                if here != alone:  # others share the key (a conflict): they stay
                    table[k] = tuple(r for r in here if r != robot)
        last = len(path) - 1
        for c in set(path[:last]):  # once per cell: a robot waiting in a cell visits it at several times
            mine = self._own(c)
            del mine[robot]
            if not mine:
                del visits[c]
        if self.park.get(path[last], (None,))[0] == robot:
            del self.park[path[last]]

    def total_conflicts(self) -> int:
        """All conflicts of the indexed plan, from the index alone."""
        n = self.n
        total = sum(len(v) * (len(v) - 1) // 2 for v in self.vert.values())
        for cell, (robot, start) in self.park.items():
            for r, times in self.visits.get(cell, _NONE).items():
                if r != robot:
                    total += sum(1 for t in times if t >= start)
        edge = self.edge
        nn = n * n
        for k, robots in edge.items():
            t, rest = divmod(k, nn)
            a, b = divmod(rest, n)
            if a < b:
                other = edge.get((t * n + b) * n + a)
                if other:
                    total += len(robots) * len(other)
        return total

    def conflicting_robots(self) -> set[int]:
        """The indexed robots with a conflict among themselves: ``total_conflicts``'s pairs by name, so that a
        rebase learns which of an answer's paths collide with each other from the index scoring built."""
        out: set[int] = set()
        for robots in self.vert.values():
            if len(robots) > 1:
                out.update(robots)
        for cell, (robot, start) in self.park.items():
            for r, times in self.visits.get(cell, _NONE).items():
                if r != robot and times[-1] >= start:
                    out.add(r)
                    out.add(robot)
        n, edge = self.n, self.edge
        nn = n * n
        for k, robots in edge.items():
            t, rest = divmod(k, nn)
            a, b = divmod(rest, n)
            other = edge.get((t * n + b) * n + a)
            if other:
                out.update(robots)
                out.update(other)
        return out

    def cross_conflicts(self, paths: Mapping[int, Path], exclude: frozenset[int] | set[int]) -> int:
        """Conflicts between ``paths`` and the indexed robots not in ``exclude``.

        Costs about the total length of ``paths`` (plus the visits to their goals). The coordinator's
        hottest loop with a team (each stale answer's paths, robot by robot, in ``rebase.keep_what_fits``),
        hence local lookups and no generators: a stale answer's scoring and rebase took 6.0 ms with this
        loop, 8.2 ms with generators (docs/notes/2026-12-05-stale-answer-cost-and-focus.md).
        """
        return sum(self._cross_path(path, exclude) for path in paths.values())

    def _cross_path(self, path: Path, exclude: frozenset[int] | set[int]) -> int:
        n = self.n
        vert_get, edge_get, park_get = self.vert.get, self.edge.get, self.park.get
        total = 0
        tn = 0
        c = path[0]
        for b in path[1:]:
            occ = vert_get(tn + c)
            if occ:
                total += _count_outside(occ, exclude)
            pk = park_get(c)
            if pk is not None and pk[1] <= tn // n and pk[0] not in exclude:
                total += 1
            if b != c:
                sw = edge_get((tn + b) * n + c)
                if sw:
                    total += _count_outside(sw, exclude)
            tn += n
            c = b
        last = len(path) - 1
        for o, times in self.visits.get(c, _NONE).items():
            if o not in exclude:
                for t in times:
                    if t >= last:
                        total += 1
        return total

    def colliders(self, robot: int, path: Path) -> set[int]:
        """The indexed robots other than ``robot`` that ``path`` conflicts with: ``_cross_path``'s pairs by
        name. Lets a search that was collision-free find its collisions from the paths it just changed, not
        from a pass over the whole index (``repair.collision_graph``). The same walk as ``_cross_path``, kept
        apart: that one, the coordinator's hottest loop, counts without building a set."""
        n = self.n
        vert_get, edge_get, park_get = self.vert.get, self.edge.get, self.park.get
        out: set[int] = set()
        tn = 0
        c = path[0]
        for b in path[1:]:
            occ = vert_get(tn + c)
            if occ:
                out.update(occ)
            pk = park_get(c)
            if pk is not None and pk[1] <= tn // n:
                out.add(pk[0])
            if b != c:
                sw = edge_get((tn + b) * n + c)
                if sw:
                    out.update(sw)
            tn += n
            c = b
        last = len(path) - 1
        for o, times in self.visits.get(c, _NONE).items():
            if times[-1] >= last:
                out.add(o)
        out.discard(robot)
        return out


def _count_outside(robots: tuple[int, ...], exclude: frozenset[int] | set[int]) -> int:
    if len(robots) == 1:  # the common case: one robot there
        return 0 if robots[0] in exclude else 1
    return sum(1 for o in robots if o not in exclude)


def _keys(n: int, path: Path) -> tuple[list[int], list[int]]:
    """A path's vertex keys (``t * n + cell`` while it moves) and edge keys (``(t * n + a) * n + b``)."""
    moves = [t * n + c for t, c in zip(range(len(path) - 1), path, strict=False)]
    return moves, [k * n + b for k, c, b in zip(moves, path, path[1:], strict=False) if b != c]


def conflicts_among(n: int, paths: Mapping[int, Path]) -> int:
    """Conflicts inside a small set of paths (a block, or two blocks)."""
    return OccupancyIndex.build(n, paths).total_conflicts()


def conflicts_between(n: int, a: Mapping[int, Path], b: Mapping[int, Path]) -> int:
    """Conflicts between two disjoint sets of robots (only pairs with one robot in each)."""
    if len(a) > len(b):
        a, b = b, a
    return OccupancyIndex.build(n, b).cross_conflicts(a, frozenset())


def full_conflicts(n: int, paths: Mapping[int, Path]) -> int:
    """Full re-scoring of a whole plan (what incremental scoring must agree with)."""
    return conflicts_among(n, paths)


def change_in_conflicts(
    index: OccupancyIndex, old: Mapping[int, Path], new: Mapping[int, Path], before: int | None = None
) -> int:
    """Conflicts after replacing ``old`` paths by ``new`` ones, minus before (same robots); ``before``, the
    old paths' conflicts, where the caller knows them (0 on a plan without any): half the count then."""
    robots = frozenset(new)
    after = index.cross_conflicts(new, robots) + conflicts_among(index.n, new)
    if before is None:
        before = index.cross_conflicts(old, robots) + conflicts_among(index.n, old)
    return after - before


@dataclass
class ChangeScan:
    """``change_in_conflicts`` path by path: a rebase of the same change reads which new paths collide from
    it instead of walking them again (``rebase.keep_what_fits``)."""

    d_conf: int
    outside: dict[int, int]
    """Each new path's conflicts with the indexed robots outside the change."""
    inside: dict[int, int]
    """Each new path's conflicts with the other new paths (each such conflict is in two of these)."""


def scan_change(index: OccupancyIndex, old: Mapping[int, Path], new: Mapping[int, Path]) -> ChangeScan:
    """``change_in_conflicts`` with each path's share, off the index (what ``PlanMirror.scan`` computes
    compiled; the tests hold one to the other)."""
    robots = frozenset(new)
    outside = {r: index._cross_path(p, robots) for r, p in new.items()}
    among = OccupancyIndex.build(index.n, new)
    inside = {r: among._cross_path(p, {r}) for r, p in new.items()}
    before = index.cross_conflicts(old, robots) + conflicts_among(index.n, old)
    return ChangeScan(sum(outside.values()) + sum(inside.values()) // 2 - before, outside, inside)
