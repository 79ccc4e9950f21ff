"""Collision-minimizing repair (after MAPF-LNS2, Li et al. AAAI 2022): reach a first collision-free plan.

Plain prioritized planning fails at density: a robot planned late finds no collision-free path (a robot
planned earlier parks on its only corridor) and the plan has a hole. LNS2 never fails instead: each robot
takes the path with the fewest collisions against the robots already planned, and collision-based
neighbourhoods (robots in collision, grown by a random walk over the collision graph) are re-planned
while the number of collisions does not grow, until it is 0.

- ``soft_path``: SIPP's collision-free path when a bounded SIPP finds one; otherwise space-time A*
  (``astar.plan_path``) on t + ``penalty`` x collisions (a consistent cost, so the search stays about as
  small as a shortest-path search instead of exhausting every collision-free state first, which is what
  made the lexicographic A* time out at density). It never fails on a reachable goal: past its budget
  it returns the plain shortest path, collisions and all.
- ``prioritized``: one pass of prioritized planning, hard (SIPP only: None when a robot has no
  collision-free path, the baseline that fails) or soft (``soft_path``: always a plan).
- ``collision_neighbourhood``: a random walk over the collision graph from a random colliding robot;
  the steps in between re-plan one colliding robot alone (``alone``), or one with the robots parked on
  its way and those crossing its goal (``target_neighbourhood``).
- ``repair``: the repair loop on a set of robots against a fixed reservation table; it accepts a
  re-planned neighbourhood only when the collision count does not grow (sum of costs breaks ties), and
  returns the accepted counts so the invariant can be checked.

One job over 400 lines: one algorithm (collision-minimizing repair) and the bookkeeping it needs, read top
to bottom.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tasks.routing.astar import plan_path
from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.occupancy import OccupancyIndex, Path, change_in_conflicts, cost
from tasks.routing.reservations import Reservations
from tasks.routing.sipp import sipp_path, sipp_search


def soft_path(
    grid: Grid,
    start: int,
    goal: int,
    table: Reservations,
    max_len: int,
    deadline: float | None = None,
    penalty: int = 4,
    expansions: int = 30_000,
    salt: int = 0,
) -> tuple[Path, int] | None:
    """(path, collisions with the table): collision-free when SIPP finds it cheaply, else fewest-ish."""
    if grid.distances(goal)[start] == UNREACHABLE:
        return None
    path = sipp_path(grid, start, goal, table, max_len, deadline, expansions=expansions // 4, salt=salt)
    if path is not None:
        return path, 0
    return fewest_collisions_path(grid, start, goal, table, max_len, deadline, penalty, expansions)


def fewest_collisions_path(
    grid: Grid,
    start: int,
    goal: int,
    table: Reservations,
    max_len: int,
    deadline: float | None = None,
    penalty: int = 4,
    expansions: int = 30_000,
) -> tuple[Path, int]:
    """``soft_path`` once SIPP found nothing: the penalized space-time A*, or past its budget the plain
    shortest path (the goal must be reachable)."""
    found = plan_path(grid, start, goal, table, max_len, deadline, expansions, penalty)
    if found is not None:
        return found
    fallback = tuple(grid.shortest_path(start, goal))
    return fallback, table.path_conflicts(fallback)


def prioritized(
    grid: Grid,
    starts: Sequence[int],
    goals: Sequence[int],
    max_len: int,
    *,
    soft: bool,
    order: Sequence[int] | None = None,
    table: Reservations | None = None,
    deadline: float | None = None,
) -> list[Path] | None:
    """Prioritized planning in ``order``; hard (``soft`` False) returns None as soon as a robot is stuck."""
    table = table if table is not None else Reservations(grid.n_cells)
    out: list[Path | None] = [None] * len(starts)
    for i in order if order is not None else range(len(starts)):
        if soft:
            found = soft_path(grid, starts[i], goals[i], table, max_len, deadline)
            path = None if found is None else found[0]
        else:
            path = sipp_path(grid, starts[i], goals[i], table, max_len, deadline)
        if path is None:
            if not soft:
                return None
            path = tuple(grid.shortest_path(starts[i], goals[i]))
        out[i] = path
        table.add_path(path)
    for p in out:
        if p is not None:
            table.remove_path(p)
    return [p for p in out if p is not None]


def collision_pairs(grid: Grid, paths: Sequence[Path]) -> dict[int, set[int]]:
    """The collision graph among ``paths``: robot -> robots it collides with."""
    return collision_graph(OccupancyIndex.build(grid.n_cells, dict(enumerate(paths))))


def collision_graph(index: OccupancyIndex) -> dict[int, set[int]]:
    """The collision graph of the indexed robots (one pass over the index)."""
    graph: dict[int, set[int]] = {}
    n = index.n

    def link(a: int, b: int) -> None:
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set()).add(a)

    for robots in index.vert.values():
        for j, a in enumerate(robots):
            for b in robots[j + 1 :]:
                link(a, b)
    for cell, (robot, arrival) in index.park.items():
        for r, times in index.visits.get(cell, {}).items():
            if times[-1] >= arrival:
                link(robot, r)
    nn = n * n
    for k, robots in index.edge.items():
        t, rest = divmod(k, nn)
        a, b = divmod(rest, n)
        for r in index.edge.get((t * n + b) * n + a, ()):
            for q in robots:
                link(q, r)
    return graph


def collision_neighbourhood(
    graph: dict[int, set[int]], colliding: Sequence[int], k: int, rng: random.Random
) -> list[int]:
    """From a random colliding robot, a random walk over the collision graph (LNS2's neighbourhood);
    padded with other colliding robots when the walk's component is smaller than k."""
    if not colliding:
        return []
    cur = rng.choice(list(colliding))
    chosen = [cur]
    seen = {cur}
    for _ in range(4 * k):
        if len(chosen) >= k:
            break
        nbrs = sorted(graph.get(cur, ()))
        if not nbrs:
            break
        cur = rng.choice(nbrs)
        if cur not in seen:
            seen.add(cur)
            chosen.append(cur)
    if len(chosen) < k:
        rest = [r for r in colliding if r not in seen]
        chosen += rng.sample(rest, min(k - len(chosen), len(rest)))
    return chosen


def alone(paths: Sequence[Path], colliding: Sequence[int], tried: set[int]) -> list[int]:
    """The colliding robot with the shortest path not yet re-planned alone, as a group of one.

    Re-planned alone, a robot sees every other colliding robot where it is. That is what clears a
    parking collision: a robot parked early on a cell that another one crosses much later must arrive
    after it passes, and a neighbourhood holding both re-plans the parked robot without the other there
    whenever it comes first. The shortest trips go first: their searches are the cheapest and they are
    the ones that park early."""
    left = [i for i in colliding if i not in tried]
    return [min(left, key=lambda i: (len(paths[i]), i))] if left else []


def target_neighbourhood(
    paths: Sequence[Path], goals: Sequence[int], colliding: Sequence[int], k: int, rng: random.Random
) -> list[int]:
    """A random colliding robot first, then the robots whose goals its path crosses and those whose paths
    cross its goal (LNS2's target neighbourhood), at random up to ``k``.

    A parking collision is often one of a chain: the robot that must pass can only pass before a third
    robot, not in collision, parks in the aisle; only a group holding all of them can reorder who
    arrives when. The first robot is re-planned first, the others then fit round its new path."""
    if not colliding:
        return []
    i = rng.choice(list(colliding))
    owner = {g: j for j, g in enumerate(goals)}
    mine = set(paths[i])
    near = {owner[c] for c in mine if c in owner} | {j for j, p in enumerate(paths) if goals[i] in p}
    near.discard(i)
    rest = sorted(near)
    rng.shuffle(rest)
    return [i, *rest[: max(0, k - 1)]]


@dataclass
class RepairResult:
    paths: list[Path]
    collisions: int
    accepted: list[int] = field(default_factory=list)
    """Collision count after each accepted step (starting with the initial count): never increasing."""
    iterations: int = 0
    worse: int = 0
    """Re-planned neighbourhoods turned down for having more collisions than the plan they would replace."""


def count_collisions(grid: Grid, paths: Sequence[Path], table: Reservations) -> tuple[int, list[int]]:
    """(collisions among ``paths`` + with the table, per-robot collisions with the table)."""
    ext = [table.path_conflicts(p) for p in paths]
    inside = OccupancyIndex.build(grid.n_cells, dict(enumerate(paths))).total_conflicts()
    return inside + sum(ext), ext


SOFT_EXPANSIONS = 30_000
"""``soft_path``'s default budget of A* pops (SIPP gets a quarter)."""


class BlockSearch:
    """A block's paths against a fixed external table, changed one re-planned neighbourhood at a time.

    Keeps the external table plus the block's own paths in one table (``full``), the block's occupancy
    index and its per-robot collisions with the outside, so a step costs the neighbourhood's paths, not
    the block's: only the group's paths leave and re-enter the tables. A step is kept only when
    (collisions, sum of costs) does not grow, compared in that order.
    """

    def __init__(
        self,
        grid: Grid,
        starts: Sequence[int],
        goals: Sequence[int],
        paths: Sequence[Path],
        external: Reservations,
        max_len: int,
        rng: random.Random | None = None,
    ) -> None:
        self.grid, self.starts, self.goals, self.max_len = grid, starts, goals, max_len
        self.rng = rng
        """Salts each re-plan's SIPP search (``sipp_jit.tie_key``) so that a neighbourhood tried again can
        take other equal-cost paths; None keeps SIPP's fixed tie-break (repeatable runs in tests)."""
        self.external = external
        self.paths = list(paths)
        self.full = external.copy()
        for p in self.paths:
            self.full.add_path(p)
        self.index = OccupancyIndex.build(grid.n_cells, dict(enumerate(self.paths)))
        self.inside = self.index.total_conflicts()
        self.ext = [external.path_conflicts(p) for p in self.paths]
        self.soc = sum(cost(p) for p in self.paths)

    @property
    def collisions(self) -> int:
        return self.inside + sum(self.ext)

    def _salt(self) -> int:
        return 0 if self.rng is None else self.rng.getrandbits(32) | 1

    def colliding(self) -> tuple[dict[int, set[int]], list[int]]:
        """(the collision graph inside the block, every robot with a collision inside or outside)."""
        graph = collision_graph(self.index)
        return graph, sorted(set(graph) | {i for i, e in enumerate(self.ext) if e})

    def try_group(self, group: Sequence[int], deadline: float | None) -> tuple[bool, int, int]:
        """Re-plan ``group`` one by one; (kept, the trial's collisions, the trial's sum of costs).

        On a collision-free block only a collision-free group whose sum of costs does not grow can be
        kept, so there each robot's search is bounded by the slack the robots before it left (``_clean``):
        a trial that cannot be kept stops at its first robot without such a path."""
        full, paths = self.full, self.paths
        old = {i: paths[i] for i in group}
        for p in old.values():
            full.remove_path(p)
        if self.collisions == 0:
            return self._clean(group, old, deadline)
        new: dict[int, Path] = {}
        for i in group:
            found = soft_path(
                self.grid, self.starts[i], self.goals[i], full, self.max_len, deadline, salt=self._salt()
            )
            new[i] = old[i] if found is None else found[0]
            full.add_path(new[i])
        d_inside = change_in_conflicts(self.index, old, new)
        ext = {i: self.external.path_conflicts(p) for i, p in new.items()}
        collisions = self.collisions + d_inside + sum(ext.values()) - sum(self.ext[i] for i in group)
        soc = self.soc + sum(cost(p) for p in new.values()) - sum(cost(p) for p in old.values())
        if (collisions, soc) > (self.collisions, self.soc):
            self._restore(old, new)
            return False, collisions, soc
        self._commit(old, new, ext, d_inside, soc)
        return True, collisions, soc

    def _clean(
        self, group: Sequence[int], old: dict[int, Path], deadline: float | None
    ) -> tuple[bool, int, int]:
        """``try_group`` on a collision-free block: the same trials kept, the others cut short.

        Robot i may arrive by its BFS distance plus the slack left (the group's old sum of costs minus
        the new costs so far minus the BFS distances of the robots still to plan): any later arrival
        makes the group's sum of costs grow. SIPP with that bound either finds the very path the
        unbounded SIPP would (it arrives in time) or proves there is none, and then the trial is
        turned down at once. Only when SIPP runs out of budget is the penalized A* asked, as before. A
        trial that goes through has no collision (each path was collision-free against everything
        placed at its turn), so nothing needs counting. A trial cut short reports 0 collisions and the
        current sum of costs plus one: worse than the plan, as the finished trial would have been."""
        grid, full = self.grid, self.full
        dist = [grid.distances(self.goals[i])[self.starts[i]] for i in group]
        slack = sum(cost(p) for p in old.values()) - sum(dist)
        new: dict[int, Path] = {}
        for i, d in zip(group, dist, strict=True):
            s, g = self.starts[i], self.goals[i]
            path, proof = sipp_search(
                grid, s, g, full, self.max_len, deadline, SOFT_EXPANSIONS // 4, bound=d + slack,
                salt=self._salt(),
            )  # fmt: skip
            if path is None and not proof:
                path, conflicts = fewest_collisions_path(grid, s, g, full, self.max_len, deadline)
                if conflicts or cost(path) > d + slack:
                    path = None
            if path is None:
                self._restore(old, new)
                return False, 0, self.soc + 1
            new[i] = path
            full.add_path(path)
            slack -= cost(path) - d
        soc = self.soc + sum(cost(p) for p in new.values()) - sum(cost(p) for p in old.values())
        self._commit(old, new, dict.fromkeys(new, 0), 0, soc)
        return True, 0, soc

    def put_back(self, before: Sequence[Path]) -> int:
        """Give each robot back its path from ``before`` where the search only swapped it for another of the
        same cost and the old one still fits (no conflict with anything else in ``full``); how many.

        Salted ties walk robots along plateaus of equal cost: a proposal on 200 robots came back with ~150
        paths changed for 4-26 that changed cost, and every changed path costs the coordinator's scoring and
        widens the footprint the team's merges must keep apart. The sum of costs stays, and a block with
        collisions is left as it is."""
        return self.adopt(dict(enumerate(before)))

    def adopt(self, wanted: Mapping[int, Path]) -> int:
        """Give robot i the path ``wanted[i]`` where it costs what its path costs now and fits (no conflict
        with anything else in ``full``); how many changed. The sum of costs stays and no collision comes in;
        a block with collisions is left as it is.

        ``put_back`` adopts the paths a proposal started from."""
        if self.collisions:
            return 0
        full, paths, index = self.full, self.paths, self.index
        count, moved = 0, True
        while moved:  # a path adopted may have been in the way of another's: until none moves
            moved = False
            for i, path in wanted.items():
                now = paths[i]
                if now is path or len(now) != len(path):
                    continue
                if now == path:  # the very same cells: the tables hold them already
                    paths[i] = path
                    continue
                if full.path_conflicts_without(path, now) == 0:
                    full.remove_path(now)
                    full.add_path(path)
                    index.remove(i, now)
                    index.add(i, path)
                    paths[i] = path
                    count += 1
                    moved = True
        return count

    def follow(self, before: Sequence[Path], now: Sequence[Path]) -> tuple[int, int]:
        """Bring the search from the plan ``before`` to the plan ``now`` (others' merges, or this search's own
        answer, merged): each robot whose path ``now`` changed takes it, and a robot this search walked
        that then collides goes back to its path in ``now``, until nothing collides; (taken, put back).
        The walk of every other robot stays. Reverting every walked robot gives ``now`` itself, so on a
        collision-free ``now`` the search ends collision-free.

        Paths equal to ``now``'s take its tuples: an answer leaves out the robots whose path ``is`` the
        contract's."""
        paths = self.paths
        taken = {i: p for i, (b, p) in enumerate(zip(before, now, strict=True)) if p is not b and p != b}
        changed = {i: p for i, p in taken.items() if paths[i] != p}
        if self.collisions == 0:
            reverted = self._follow_clean(changed, now)
        else:
            self._replace(changed)
            reverted = 0
            while self.collisions:
                changed = {i: now[i] for i in self.colliding()[1] if paths[i] != now[i]}
                if not changed:
                    break  # ``now`` collides by itself: nothing of the walk is in the way
                self._replace(changed)
                reverted += len(changed)
        for i, p in enumerate(now):
            if paths[i] is not p and paths[i] == p:
                paths[i] = p
        return len(taken), reverted

    def _follow_clean(self, changed: dict[int, Path], now: Sequence[Path]) -> int:
        """``follow`` from a collision-free search; how many walked robots went back. Every collision to come
        has a robot just changed in it, so the robots in the way are found from the changed paths alone
        (``_colliding_with``) and the conflicts are counted only if some are left at the end: counting each
        change's conflicts (``_replace``) was a quarter to a third of ``follow``'s CPU (16 agents, k = 300).

        A collision left at the end has a robot that some round found colliding (the later changed of the
        two, found when it changed), so looking again at those robots tells whether any is left."""
        paths = self.paths
        found: set[int] = set()
        reverted = -len(changed)  # the first change is what merged, not a robot going back
        while changed:
            self._move(changed, 0)
            reverted += len(changed)
            colliding = self._colliding_with(changed)
            found |= colliding
            changed = {i: now[i] for i in colliding if paths[i] != now[i]}
        if self._colliding_with(found):  # ``now`` collides by itself
            self.inside = self.index.total_conflicts()
        return reverted

    def _colliding_with(self, robots: Iterable[int]) -> set[int]:
        """Of ``robots``, those with a collision, and the robots they collide with: on a search that was
        collision-free before ``robots`` changed, every robot ``colliding`` names (a pass over the whole
        index, a third of ``follow``'s CPU at 300 robots), found from their paths alone."""
        paths, index, ext = self.paths, self.index, self.ext
        out: set[int] = set()
        for i in robots:
            hit = index.colliders(i, paths[i])
            if hit or ext[i]:
                out.add(i)
                out |= hit
        return out

    def _replace(self, new: dict[int, Path]) -> None:
        """Robot i takes the path ``new[i]``, whatever it costs or collides with (``follow``)."""
        if new:
            # without a conflict inside the block the old paths had none to lose: half of the count
            before = 0 if self.inside == 0 else None
            self._move(new, change_in_conflicts(self.index, {i: self.paths[i] for i in new}, new, before))

    def _move(self, new: dict[int, Path], d_inside: int) -> None:
        """Robot i takes the path ``new[i]``, the conflicts inside the block changing by ``d_inside``."""
        paths, full = self.paths, self.full
        old = {i: paths[i] for i in new}
        for p in old.values():
            full.remove_path(p)
        for p in new.values():
            full.add_path(p)
        ext = {i: self.external.path_conflicts(p) for i, p in new.items()}
        soc = self.soc + sum(cost(p) for p in new.values()) - sum(cost(p) for p in old.values())
        self._commit(old, new, ext, d_inside, soc)

    def _restore(self, old: dict[int, Path], new: dict[int, Path]) -> None:
        """Take a turned-down trial's paths out of ``full`` and put the group's old ones back (a robot
        re-planned onto its very cells is left in place: out and back in would be two passes for nothing)."""
        full = self.full
        same = {i for i, p in new.items() if p == old[i]}
        for i, p in new.items():
            if i not in same:
                full.remove_path(p)
        for i, p in old.items():
            if i not in same:
                full.add_path(p)

    def _commit(
        self, old: dict[int, Path], new: dict[int, Path], ext: dict[int, int], d_inside: int, soc: int
    ) -> None:
        """Make a kept trial the block's plan (``full`` already holds its paths)."""
        paths, index = self.paths, self.index
        for i, p in new.items():
            if p == old[i]:  # the same cells: the index holds them, and the old tuple stays (``p is c``)
                p = old[i]
            else:
                index.remove(i, old[i])
                index.add(i, p)
            paths[i] = p
            self.ext[i] = ext[i]
        self.inside += d_inside
        self.soc = soc


def repair(
    grid: Grid,
    starts: Sequence[int],
    goals: Sequence[int],
    paths: Sequence[Path],
    table: Reservations,
    max_len: int,
    *,
    deadline: float,
    k: int = 8,
    rng: random.Random | None = None,
    max_iterations: int | None = None,
    search: BlockSearch | None = None,
    patience: int | None = None,
) -> RepairResult:
    """Re-plan collision neighbourhoods of ``paths`` (the table stays fixed) until no collision is left,
    the deadline passes, ``max_iterations`` are spent or ``patience`` steps in a row did not lower the
    collisions (an instance with no collision-free plan would otherwise hold the whole deadline); a step is
    kept only if collisions do not grow."""
    rng = rng or random.Random(0)
    search = search or BlockSearch(grid, starts, goals, paths, table, max_len)
    out = RepairResult(search.paths, search.collisions, [search.collisions])
    tried: set[int] = set()  # robots re-planned alone since the collisions last went down
    lowered_at = 0  # the iteration that last lowered the collisions
    while search.collisions > 0 and time.perf_counter() < deadline:
        if max_iterations is not None and out.iterations >= max_iterations:
            break
        if patience is not None and out.iterations - lowered_at >= patience:
            break
        out.iterations += 1
        graph, colliding = search.colliding()
        step = out.iterations % 3
        group = alone(search.paths, colliding, tried) if step == 1 else []
        if group:
            tried.update(group)
        elif step == 2:
            group = target_neighbourhood(search.paths, search.goals, colliding, k, rng)
        else:
            group = collision_neighbourhood(graph, colliding, min(k, len(search.paths)), rng)
            rng.shuffle(group)
        before = search.collisions
        kept, collisions, _soc = search.try_group(group, deadline)
        if kept:
            out.accepted.append(collisions)
            if collisions < before:
                tried.clear()
                lowered_at = out.iterations
        elif collisions > before:
            out.worse += 1
    out.paths, out.collisions = list(search.paths), search.collisions
    return out
