"""The heuristic proposer: LNS over the block's robots with SIPP re-planning (space-time A* when every path conflicts).

Each iteration picks a neighbourhood of the block (robots in conflict first,
then a random or a spatial group), removes their paths and re-plans them one
by one with soft reservations against everything else the contract shows.
The surrogate is the block's sum of costs + W x (conflicts inside the block +
conflicts with the reservation table); its decrease is the predicted
improvement, so the coordinator measures the correction error δ honestly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from tasks.base import Draft, Proposer
from tasks.routing.destroy import GENERATORS, AdaptiveWeights
from tasks.routing.grid import Grid
from tasks.routing.occupancy import OccupancyIndex, Path, conflicts_among, cost
from tasks.routing.repair import repair, soft_path
from tasks.routing.reservations import Reservations


def replan(
    grid: Grid, start: int, goal: int, table: Reservations, max_len: int, deadline: float | None
) -> tuple[Path, int] | None:
    """SIPP's earliest conflict-free path when a bounded SIPP finds one (few nodes per long wait);
    otherwise the collision-penalized A* of the repair (never the exhaustive lexicographic search,
    which timed out at density)."""
    return soft_path(grid, start, goal, table, max_len, deadline)


def table_from_contract(grid: Grid, data: Mapping[str, Any]) -> Reservations:
    res = Reservations(grid.n_cells)
    table = data["reservations"]
    cell = grid.cell
    for _robot, t0, cells, arrives in table["moves"]:
        res.add_run(int(t0), [cell(x, y) for x, y in cells], bool(arrives))
    return res


class RoutingProposer(Proposer):
    def __init__(
        self,
        grid: Grid,
        *,
        time_budget: float,
        neighbourhood: int,
        max_len: int,
        patience: int = 0,
        seed: int = 0,
    ) -> None:
        self.grid = grid
        self.time_budget = time_budget
        self.neighbourhood = neighbourhood
        self.max_len = max_len
        self.rng = random.Random(seed)
        self.patience = patience
        self._misses: dict[int, int] = {}
        self.wheel = AdaptiveWeights([*GENERATORS, "spatial"])
        self._tabu: set[int] = set()
        self._tables: dict[int, tuple[dict[int, list[tuple[int, Any, bool]]], Reservations]] = {}

    def _table(self, block: int, data: Mapping[str, Any]) -> Reservations:
        """The block's reservation table, kept between its contracts: only the robots whose runs changed
        are taken out and put back (two contracts of one block repeat most of the plan)."""
        runs: dict[int, list[tuple[int, Any, bool]]] = {}
        for robot, t0, cells, arrives in data["reservations"]["moves"]:
            runs.setdefault(int(robot), []).append((int(t0), cells, bool(arrives)))
        old, table = self._tables.get(block) or ({}, Reservations(self.grid.n_cells))
        cell = self.grid.cell
        for r, before in old.items():
            if runs.get(r) != before:
                for t0, cells, arrives in before:
                    table.remove_run(t0, [cell(x, y) for x, y in cells], arrives)
        for r, now in runs.items():
            if old.get(r) != now:
                for t0, cells, arrives in now:
                    table.add_run(t0, [cell(x, y) for x, y in cells], arrives)
        self._tables[block] = (runs, table)
        return table

    @property
    def lag_rounds(self) -> int:
        """A randomized search that finds nothing in one budget may find something in the next."""
        return self.patience

    # -- the surrogate -----------------------------------------------------
    def _score(self, external: Reservations, paths: list[Path], weight: float) -> tuple[float, list[int]]:
        """(surrogate value, per-robot conflict counts with the table) of the block's paths."""
        ext = [external.path_conflicts(p) for p in paths]
        inside = conflicts_among(self.grid.n_cells, dict(enumerate(paths)))
        soc = sum(cost(p) for p in paths)
        return soc + weight * (sum(ext) + inside), ext

    def _in_conflict(self, paths: list[Path], ext: list[int]) -> list[int]:
        """Robots with a conflict, with the table or inside the block."""
        index = OccupancyIndex.build(self.grid.n_cells, dict(enumerate(paths)))
        return [i for i, p in enumerate(paths) if ext[i] or index.cross_conflicts({i: p}, frozenset((i,)))]

    def _neighbourhood(
        self, paths: list[Path], conflicted: list[int], starts: list[int], goals: list[int]
    ) -> tuple[list[int], str]:
        """Robots in conflict first; otherwise a destroy heuristic drawn from the ALNS wheel
        (random walk from the most-delayed robot, intersection, random, spatial), padded at random to k."""
        k = min(self.neighbourhood, len(paths))
        rng = self.rng
        if conflicted:
            return rng.sample(conflicted, min(k, len(conflicted))), "conflicts"
        name = self.wheel.choose(rng)
        if name == "spatial":
            group = self._spatial(paths, k)
        else:
            group = list(
                dict.fromkeys(GENERATORS[name](self.grid, paths, starts, goals, k, rng, self._tabu))
            )[:k]
        if len(group) < k:
            rest = [j for j in range(len(paths)) if j not in set(group)]
            group += rng.sample(rest, k - len(group))
        return group, name

    def _spatial(self, paths: list[Path], k: int) -> list[int]:
        """The robots whose routes pass closest to a random robot's route."""
        w = self.grid.width
        pivot = paths[self.rng.randrange(len(paths))]
        cx = sum(c % w for c in pivot) / len(pivot)
        cy = sum(c // w for c in pivot) / len(pivot)

        def dist(i: int) -> float:
            p = paths[i]
            return min(abs(c % w - cx) + abs(c // w - cy) for c in p[:: max(1, len(p) // 8)] + p[-1:])

        return sorted(range(len(paths)), key=dist)[:k]

    # -- one proposal ----------------------------------------------------------
    def _budget(self, contract: Mapping[str, Any], block: int) -> float:
        """A block where the last searches found nothing gets a longer search (up to 4x)."""
        budget = self.time_budget * 2 ** min(self._misses.get(block, 0), 2)
        left = (contract.get("budget") or {}).get("seconds")
        return budget if left is None else max(0.01, min(budget, float(left)))

    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        started = time.perf_counter()
        data = contract["data"]
        block = int(contract["block"])
        grid = self.grid
        weight = float(data["conflict_weight"])
        deadline = started + self._budget(contract, block)
        robots = data["robots"]
        starts = [grid.cell(*r["start"]) for r in robots]
        goals = [grid.cell(*r["goal"]) for r in robots]
        current = [tuple(grid.cell(x, y) for x, y in r["path"]) for r in robots]
        t_table = time.perf_counter()
        external = self._table(block, data)
        t_table = time.perf_counter() - t_table

        initial, ext = self._score(external, current, weight)
        best, best_value = list(current), initial
        iterations = replans = 0
        collisions: list[int] | None = None
        if initial >= weight:  # collisions: LNS2's repair first, until none is left or time is up
            fixed = repair(
                grid,
                starts,
                goals,
                best,
                external,
                self.max_len,
                deadline=deadline,
                k=self.neighbourhood,
                rng=self.rng,
            )
            collisions = [fixed.accepted[0], fixed.accepted[-1]]
            iterations += fixed.iterations
            best = fixed.paths
            best_value, ext = self._score(external, best, weight)
        while time.perf_counter() < deadline and best:
            iterations += 1
            conflicted = self._in_conflict(best, ext)
            group, generator = self._neighbourhood(best, conflicted, starts, goals)
            self.rng.shuffle(group)
            keep = [i for i in range(len(best)) if i not in set(group)]
            for i in keep:
                external.add_path(best[i])
            trial = list(best)
            planned: list[Path] = []
            ok = True
            for i in group:
                found = replan(grid, starts[i], goals[i], external, self.max_len, deadline)
                replans += 1
                if found is None:
                    ok = False
                    break
                trial[i] = found[0]
                external.add_path(found[0])
                planned.append(found[0])
            for p in planned:
                external.remove_path(p)
            for i in keep:
                external.remove_path(best[i])
            if not ok:
                continue
            value, trial_ext = self._score(external, trial, weight)
            if generator in self.wheel.weights:
                self.wheel.reward(generator, (best_value - value) / len(group))
            if value <= best_value:
                best, best_value, ext = trial, value, trial_ext
        if best_value >= initial:
            self._misses[block] = self._misses.get(block, 0) + 1
            return None
        self._misses[block] = 0
        return Draft(
            block=block,
            value=[[list(grid.xy(c)) for c in p] for p in best],
            predicted_improvement=initial - best_value,
            info={
                "iterations": iterations,
                "replans": replans,
                "seconds": time.perf_counter() - started,
                "table_seconds": t_table,
                "destroy_weights": {k: round(v, 4) for k, v in self.wheel.weights.items()},
                **({"collisions": collisions} if collisions is not None else {}),
            },
        )
