"""A stale proposal made current: what an agent wrote on an older plan, settled against the plan as it is.

Agents work in parallel, so paths found on an older plan may cross paths that merged meanwhile. The
coordinator keeps what it can of such an answer, cheapest first:

1. ``drop_colliding``: the written robots whose new paths collide go back to their current paths (and
   robots moved aside for them, where their current paths fit), no search at all; what the agent found
   for the others merges if it still gains.
2. ``Rebaser.repair``: LNS2's repair of the written robots against the rest of the plan, within
   ``rebase_repair`` seconds (0 by default), when putting back leaves no gain. At 16 agents it kept the
   coordinator 66-73 % busy against 60-64 % without, for no lower plan
   (docs/notes/2026-12-05-stale-answers-put-back.md).

A robot the proposal leaves alone (null) keeps its current path and is part of the fixed plan in both.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence

from tasks.routing.grid import Grid
from tasks.routing.occupancy import ChangeScan, OccupancyIndex, Path, cost
from tasks.routing.plan_mirror import PlanMirror
from tasks.routing.repair import BlockSearch, repair
from tasks.routing.reservations import Reservations
from tasks.routing.state import Proposed, RoutingState


def drop_colliding(
    index: OccupancyIndex, current: Sequence[Path], written: Mapping[int, Path]
) -> dict[int, Path]:
    """The written paths that fit the plan as it is, the others put back (``keep_what_fits``)."""
    return keep_what_fits(index, current, written)[0]


def keep_what_fits(
    index: OccupancyIndex,
    current: Sequence[Path],
    written: Mapping[int, Path],
    scan: ChangeScan | None = None,
) -> tuple[dict[int, Path], bool]:
    """(the written paths that fit the plan as it is, whether any collided at all).

    A robot whose new path collides with the plan (or with a kept robot's new path) gets its current path
    back, until nothing collides: a robot put back may be in the way of another's new path, so this runs
    to a fixed point. Only the first pass checks every written robot. A robot that passed can collide later
    only with a path just put back, so each later pass walks those paths against the kept ones
    (``colliders``): the robots they hit are the next to go back. The rebase was 29-33 % of the coordinator's
    CPU at 16 agents while every robot sharing a cell with a path put back was walked again; with these passes
    and ``scan`` a stale answer costs it half (docs/notes/2026-12-07-keep-walk-and-coordinator-costs.md).
    Then a kept robot whose new path costs more than its current one (moved aside for a robot now put back)
    gets its current path back where that path fits the kept ones. No search.

    ``scan``: the scoring's ``ChangeScan`` of these very paths on this plan: the first pass is then read off
    it, without a walk, and the new paths' own index is built only if a later step needs it."""
    kept = dict(written)
    among: OccupancyIndex | None = None
    if scan is not None and scan.outside.keys() == kept.keys():
        colliding = [r for r in kept if scan.outside[r] or scan.inside[r]]
    else:
        among = OccupancyIndex.build(index.n, kept)
        out = set(kept)
        colliding = [
            r
            for r, p in kept.items()
            if index.cross_conflicts({r: p}, out) or among.cross_conflicts({r: p}, {r})
        ]
    collided = bool(colliding)
    while colliding:
        if among is None:
            among = OccupancyIndex.build(index.n, kept)
        for r in colliding:
            among.remove(r, kept.pop(r))
        hit: set[int] = set()
        for r in colliding:
            hit |= among.colliders(r, current[r])
        colliding = sorted(hit)
    for r in sorted(kept, key=lambda r: cost(current[r]) - cost(kept[r])):  # the dearest change first
        if cost(kept[r]) <= cost(current[r]):
            break
        if among is None:
            among = OccupancyIndex.build(index.n, kept)
        if not among.cross_conflicts({r: current[r]}, {r}):
            among.remove(r, kept.pop(r))
    return kept, collided


class Rebaser:
    """Settles stale proposals against the current plan; keeps the plan's reservation table between calls
    (moved path by path from one plan to the next) for the repair."""

    def __init__(
        self,
        grid: Grid,
        starts: Sequence[int],
        goals: Sequence[int],
        max_len: int,
        mirror: PlanMirror | None = None,
    ) -> None:
        """``mirror``: the plan's count arrays that scored the answers (``PlanMirror``), which then settle
        them compiled; without it, or without the scoring's scan, ``keep_what_fits`` walks the index."""
        self.grid, self.starts, self.goals, self.max_len = grid, starts, goals, max_len
        self.mirror = mirror
        self._plan: tuple[tuple[Path, ...], Reservations] | None = None

    def rebase(
        self,
        state: RoutingState,
        robots: Sequence[int],
        value: Proposed,
        seconds: float,
        rng: random.Random,
        scan: ChangeScan | None = None,
    ) -> Proposed | None:
        """``value`` (one entry per robot of ``robots``, null: keep) made to fit ``state``: None when nothing
        of it collides (it did not improve for another reason), or neither dropping nor a repair within
        ``seconds`` (0: none) keeps a gain. What fits and costs no more is kept: a team's walk merges level
        (``RoutingTask.moves``)."""
        written = {r: p for r, p in zip(robots, value, strict=True) if p is not None}
        if not written:
            return None
        paths = state.paths
        # on a plan without conflicts a path sent again as it is collides only where a changed one does, so
        # only the changed are checked (the paths the scoring's ``scan`` holds)
        changed = written if state.conflicts else {r: p for r, p in written.items() if p != paths[r]}
        if self.mirror is not None and scan is not None and scan.outside.keys() == changed.keys():
            kept, collided = self.mirror.keep_what_fits(paths, changed, scan)
        else:
            kept, collided = keep_what_fits(state.index, paths, changed, scan)
        if not collided:
            return None
        longer = sum(cost(p) - cost(paths[r]) for r, p in kept.items())
        if kept and (longer < 0 or (longer == 0 and any(p != paths[r] for r, p in kept.items()))):
            return tuple(kept.get(r) for r in robots)
        repaired = self.repair(state, written, seconds, rng) if seconds > 0 else None
        return None if repaired is None else tuple(repaired.get(r) for r in robots)

    def repair(
        self, state: RoutingState, written: Mapping[int, Path], seconds: float, rng: random.Random
    ) -> dict[int, Path] | None:
        """LNS2's repair of the written robots against every other path of ``state`` for up to ``seconds``:
        their new paths, or None if some collision is left."""
        robots = list(written)
        others = self.plan_table(state)
        for r in robots:  # the rest of the plan: its table without these robots' paths (put back below)
            others.remove_path(state.paths[r])
        try:
            starts = [self.starts[r] for r in robots]
            goals = [self.goals[r] for r in robots]
            search = BlockSearch(self.grid, starts, goals, list(written.values()), others, self.max_len)
            if search.collisions == 0:
                return None
            fixed = repair(
                self.grid, starts, goals, search.paths, others, self.max_len,
                deadline=time.perf_counter() + seconds, rng=rng, search=search,
            )  # fmt: skip
        finally:
            for r in robots:
                others.add_path(state.paths[r])
        return None if fixed.collisions else dict(zip(robots, fixed.paths, strict=True))

    def plan_table(self, state: RoutingState) -> Reservations:
        """Every path of ``state`` as a reservation table with its array mirror, kept for the last plan and
        moved to the next one path by path. Built from scratch it was most of a rebase (adding 300 paths to
        the dicts, then their arrays: two thirds of the coordinator's time on stale answers at k = 300)."""
        kept = self._plan
        if kept is None or len(kept[0]) != len(state.paths):
            table = Reservations(self.grid.n_cells)
            for p in state.paths:
                table.add_path(p)
            table.arrays(self.grid.width)
            self._plan = (state.paths, table)
            return table
        old, table = kept
        if old is not state.paths:
            for before, after in zip(old, state.paths, strict=True):
                if before is not after and before != after:
                    table.remove_path(before)
                    table.add_path(after)
            self._plan = (state.paths, table)
        return table
