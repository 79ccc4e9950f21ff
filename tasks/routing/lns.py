"""The heuristic proposer: LNS over the block's robots with SIPP re-planning (collision-penalized A* when SIPP finds no path).

While the block has collisions, LNS2's repair (repair.py) re-plans collision
neighbourhoods; once it has none, each iteration picks a neighbourhood from
the ALNS wheel (destroy.py, or a spatial group) and re-plans it one robot at a
time against everything else the contract shows (repair.BlockSearch: a step
costs the neighbourhood's paths, not the block's). Each re-plan salts SIPP's tie-break from the
proposer's rng, as MAPF-LNS2's random tie-breaking does: with one fixed choice among equal-cost paths a
neighbourhood tried again takes the same paths, and the search stays on its plateau (empty-16-16 k=50,
about 2,000 steps: 510-511 with fixed ties, LNS2's 507 with salted ones on 3 of 3 seeds;
docs/notes/2026-12-03-salted-ties.md).
Before it answers, a proposal gives robots back their old paths of equal cost where those still fit
(``BlockSearch.put_back``), so that it changes the robots that had to move and not the plateau's walk.
The search is kept after it answers or finds nothing, walk and all, and gone on with when the next contract
holds the same robots against the same reservation table: what merged meanwhile (this search's own answer,
or another agent's on the same robots) is taken into it, and only walked robots that then collide go back
(``BlockSearch.follow``). Dropping the walk at the end of each search held one agent on a plateau that one
loop keeping its walk leaves (docs/notes/2026-12-06-walks-kept.md); agents on whole-plan leases
(``lease_robots`` = every robot) each keep one walk over the whole plan, as DROP-LNS's workers do.
The surrogate is the block's sum of costs + W x (conflicts inside the block +
conflicts with the reservation table); its decrease is the predicted
improvement, so the coordinator measures the correction error δ honestly.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from tasks.base import Draft, Proposer
from tasks.routing.destroy import GENERATORS, AdaptiveWeights
from tasks.routing.grid import Grid
from tasks.routing.kept_contract import ContractNotKept, ContractReader, Robots
from tasks.routing.occupancy import Path, cost
from tasks.routing.repair import BlockSearch, repair
from tasks.routing.reservations import Reservations

log = logging.getLogger("blockopt.agent")


def table_from_contract(grid: Grid, data: Mapping[str, Any]) -> Reservations:
    res = Reservations(grid.n_cells)
    table = data["reservations"]
    cell = grid.cell
    for _robot, t0, cells, arrives in table["moves"]:
        res.add_run(int(t0), [cell(x, y) for x, y in cells], bool(arrives))
    return res


class KeptSearch(NamedTuple):
    """The last search and the contract it answered: its robots, the reservation table's moves, the paths."""

    ids: list[int]
    moves: Any
    plan: list[Path]
    search: BlockSearch


class RoutingProposer(Proposer):
    retry_pause = 0.0
    """Its next search draws other neighbourhoods. One agent that waited 0.05 s after each search that found
    nothing spent a fifth of its run in those waits (docs/notes/2026-12-06-the-late-phase.md)."""

    def __init__(
        self,
        grid: Grid,
        *,
        time_budget: float,
        neighbourhood: int,
        max_len: int,
        seed: int = 0,
        stop_after: int = 0,
        answer_after: int = 0,
        follow_every: float = 0.0,
        robots: int = 0,
    ) -> None:
        self.grid = grid
        self.contracts = ContractReader(grid, robots)
        """Reads each contract; with ``robots`` (the instance's) it keeps a whole-plan one, for the next to be
        written since it (0: none is kept)."""
        self.time_budget = time_budget
        self.stop_after = stop_after
        """LNS steps in a row without a lower sum of costs that end a collision-free block's proposal
        early (0: never). A block whose neighbourhoods stopped paying is at a local optimum against the
        fixed rest of the plan; the rest of its budget held the round (the agents' turns on one core, or
        the others waiting for it) instead of letting the other blocks move it on."""
        self.answer_after = answer_after
        """LNS steps in a row without a lower sum of costs after which a proposal that has gained answers,
        when its contract says others merge meanwhile (``answer_on_gain``: a team's); 0: never early. Of
        what 16 agents found in the first 5 s, the answers that arrived after others had merged kept 1.6 of
        the 12.2 they still gained over the plan they met; sent once gained, an answer merges on a fresher
        plan and the others lease from it. One agent has nobody to make room for: answering early tripled
        its answers and left it idle 43 % of the time against 22 % (docs/notes/2026-12-06-heap-and-early-
        answers.md)."""
        self.follow_every = follow_every
        """Seconds of a team's whole-plan search between asks for what merged meanwhile (``feed``); 0: never,
        the default. Of the answers 16 agents sent on k = 300, the more merges since their lease the more
        were refused (41 % after one, 71 % after two or more), mostly because a merge had changed one of
        their robots too. Taking the changes every 20 ms refused 40 % of the answers against 63 %, but the
        team sent half as many and merged fewer: 7,078 and 7,061 at 30 s against 7,025 and 7,036 without
        (docs/notes/2026-12-06-searches-follow-the-head.md)."""
        self.neighbourhood = neighbourhood
        self.max_len = max_len
        self.rng = random.Random(seed)
        self._misses: dict[int, int] = {}
        self._members: dict[int, tuple[int, ...]] = {}
        """The robots of each block at its last contract: a block formed anew starts without misses."""
        self.wheel = AdaptiveWeights([*GENERATORS, "spatial"])
        self._tabu: set[int] = set()
        self._tables: dict[int, tuple[dict[int, list[tuple[int, Any, bool]]], Reservations]] = {}
        self._kept: KeptSearch | None = None
        """The last search, unless it ended with collisions. When the next contract holds the same robots
        against the same table, the search goes on from where it stopped, the contract's changes taken in:
        its walk whole, and without building it again (half of a search's CPU at 300 robots with 100
        steps). One slot, not one per block: each kept search holds a copy of the reservation table."""

    def _table(self, block: int, data: Mapping[str, Any]) -> Reservations:
        """The block's reservation table, kept between its contracts: only the robots whose runs changed are
        taken out and put back (two contracts of one block repeat most of the plan)."""
        runs: dict[int, list[tuple[int, Any, bool]]] = {}
        for robot, t0, cells, arrives in data["reservations"]["moves"]:
            runs.setdefault(int(robot), []).append((int(t0), cells, bool(arrives)))
        old, table = self._tables.get(block) or ({}, Reservations(self.grid.n_cells))
        table.arrays(self.grid.width)  # kept in step from now on: each search copies it (18 ms to rebuild)
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

    def _neighbourhood(
        self, search: BlockSearch, conflicted: list[int], starts: list[int], goals: list[int]
    ) -> tuple[list[int], str]:
        """Robots in conflict first; otherwise a destroy heuristic drawn from the ALNS wheel
        (random walk from the most-delayed robot, intersection, random, spatial), padded at random to k."""
        paths = search.paths
        k = min(self.neighbourhood, len(paths))
        rng = self.rng
        if conflicted:
            return rng.sample(conflicted, min(k, len(conflicted))), "conflicts"
        name = self.wheel.choose(rng)
        if name == "spatial":
            group = self._spatial(search, k)
        else:
            group = list(
                dict.fromkeys(
                    GENERATORS[name](self.grid, paths, starts, goals, k, rng, self._tabu, search.index)
                )
            )[:k]
        if len(group) < k:
            rest = [j for j in range(len(paths)) if j not in set(group)]
            group += rng.sample(rest, k - len(group))
        return group, name

    def _spatial(self, search: BlockSearch, k: int) -> list[int]:
        """The ``k`` robots whose routes pass closest to a random robot's route (its cells' mean), nearest
        first, ties by robot; read off the occupancy index ring by ring around that point, so a draw costs
        the cells it looks at, not a pass over every path (which was a third of one agent's CPU at 300
        robots: the wheel draws this group on a quarter of the steps)."""
        grid, index, paths = self.grid, search.index, search.paths
        pivot = paths[self.rng.randrange(len(paths))]
        cx = round(sum(c % grid.width for c in pivot) / len(pivot))
        cy = round(sum(c // grid.width for c in pivot) / len(pivot))
        visits, park = index.visits, index.park
        chosen: list[int] = []
        seen: set[int] = set()
        for d in range(grid.width + grid.height):
            ring: set[int] = set()
            for dx in range(-d, d + 1):
                x, rest = cx + dx, d - abs(dx)
                if not 0 <= x < grid.width:
                    continue
                for y in {cy - rest, cy + rest}:
                    if 0 <= y < grid.height:
                        cell = y * grid.width + x
                        ring.update(visits.get(cell, ()))
                        parked = park.get(cell)
                        if parked is not None:
                            ring.add(parked[0])
            chosen.extend(sorted(ring - seen))
            seen |= ring
            if len(chosen) >= k:
                break
        return chosen[:k]

    # -- one proposal ----------------------------------------------------------
    def _budget(self, contract: Mapping[str, Any], block: int) -> float:
        """A block where the last searches found nothing gets a longer search (up to 4x); a block whose
        robots changed since (regrouped, or formed anew by adaptive selection) is a new search space and
        gets the base budget again. A contract's ``search_seconds`` caps it (routing's opening leases, and a
        team's leases when the plan walks with it)."""
        members = tuple(int(r["id"]) for r in contract["data"]["robots"])
        if self._members.get(block) != members:
            self._members[block] = members
            self._misses.pop(block, None)
        budget = self.time_budget * 2 ** min(self._misses.get(block, 0), 2)
        hint = contract["data"].get("search_seconds")  # the coordinator asks for an early answer
        if hint is not None:
            budget = min(budget, float(hint))
        left = (contract.get("budget") or {}).get("seconds")
        return budget if left is None else max(0.01, min(budget, float(left)))

    def _follow(self, ids: list[int], moves: Any, current: list[Path]) -> tuple[BlockSearch | None, int, int]:
        """The kept search brought to ``current`` (``BlockSearch.follow``), when the contract holds its
        robots against its table; (the search or None, robots taken, walked robots put back)."""
        kept, self._kept = self._kept, None
        if kept is None or kept.ids != ids or kept.moves != moves:
            return None, 0, 0
        search = kept.search
        taken, reverted = search.follow(kept.plan, current)
        return (search, taken, reverted) if not search.collisions else (None, 0, 0)

    def _take(
        self, search: BlockSearch, ids: list[int], current: list[Path], changes: Mapping[str, Any]
    ) -> tuple[list[Path], int]:
        """The head's changes (``RoutingTask.head_changes``) taken into the search under way
        (``BlockSearch.follow``): (the plan it is now on, how much that plan's sum of costs moved)."""
        position = {r: i for i, r in enumerate(ids)}
        path_cells = self.grid.path_cells
        now = list(current)
        for robot, xy in changes["paths"].items():
            now[position[int(robot)]] = path_cells(xy)
        search.follow(current, now)
        return now, sum(cost(p) - cost(c) for p, c in zip(now, current, strict=True) if p is not c)

    def _without_gain(
        self,
        search: BlockSearch,
        current: list[Path],
        block: int,
        data: Mapping[str, Any],
        spent: tuple[int, float],
    ) -> Draft | None:
        """A search that kept the sum of costs: in a team whose plan walks with it (``answer_walk``) it
        answers its walk, each search as short as the last; otherwise nothing (no paths put back: 2-3 of such
        a call's 95-99 ms), and the block's next search is longer."""
        if data.get("answer_walk"):
            return self._walk(search, current, block, *spent)
        self._misses[block] = self._misses.get(block, 0) + 1
        return None

    def _walk(
        self, search: BlockSearch, current: list[Path], block: int, iterations: int, started: float
    ) -> Draft | None:
        """Where the walk went (its robots that still fit their old paths put back), predicting 0, for the
        plan to walk with it (the kind's ``moves``); None when it went nowhere."""
        search.put_back(current)
        value = [None if p is c or p == c else p for p, c in zip(search.paths, current, strict=True)]
        if all(p is None for p in value):
            return None
        xy = self.grid.xy
        return Draft(
            block=block,
            value=[None if p is None else [list(xy(x)) for x in p] for p in value],
            predicted_improvement=0.0,
            info={"iterations": iterations, "seconds": time.perf_counter() - started, "walk": True},
        )

    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        started = time.perf_counter()
        try:
            robots = self.contracts.read(contract)
        except ContractNotKept as exc:  # found nothing: the next contract comes whole
            log.warning("contract not read: %s", exc)
            self.contracts.forget()
            return None
        finally:
            self.contract_kept = self.contracts.version
        return self._search(contract, robots, started)

    def _search(
        self,
        contract: Mapping[str, Any],
        robots: Robots,
        started: float,
    ) -> Draft | None:
        """One proposal's search of the contract's ``robots`` (``ContractReader.read``)."""
        data = contract["data"]
        block = int(contract["block"])
        grid = self.grid
        weight = float(data["conflict_weight"])
        deadline = started + self._budget(contract, block)
        ids, starts, goals, current = robots
        t_table = time.perf_counter()
        external = self._table(block, data)
        t_table = time.perf_counter() - t_table

        moves = data["reservations"]["moves"]
        search, taken, reverted = self._follow(ids, moves, current)
        if search is None:
            search = BlockSearch(grid, starts, goals, current, external, self.max_len, rng=self.rng)
        resumed = sum(p is not c for p, c in zip(search.paths, current, strict=True))
        initial = sum(cost(p) for p in current) + weight * search.collisions
        iterations = replans = 0
        collisions: list[int] | None = None
        if search.collisions:  # LNS2's repair first, until no collision is left or time is up
            fixed = repair(
                grid, starts, goals, current, external, self.max_len,
                deadline=deadline, k=self.neighbourhood, rng=self.rng, search=search,
            )  # fmt: skip
            collisions = [fixed.accepted[0], fixed.accepted[-1]]
            iterations += fixed.iterations
        best_value = search.soc + weight * search.collisions
        # a team's search answers once it gained and stopped gaining, unless each answers after a short walk
        answer_after = self.answer_after if data.get("answer_on_gain") and not data.get("answer_walk") else 0
        # a team's search of the whole plan (no robot outside it) takes what merges while it runs
        feed = self.feed if data.get("answer_on_gain") and self.follow_every > 0 and not moves else None
        next_ask = time.perf_counter() + self.follow_every
        followed = 0
        idle = 0  # steps since the sum of costs last went down
        while time.perf_counter() < deadline and current and not search.collisions:
            if feed is not None and time.perf_counter() >= next_ask:
                changes = feed()
                next_ask = time.perf_counter() + self.follow_every
                if changes:
                    current, shift = self._take(search, ids, current, changes)
                    initial += shift
                    best_value = search.soc + weight * search.collisions
                    followed += 1
                    continue
            if self.stop_after and idle >= self.stop_after:
                break
            if answer_after and idle >= answer_after and best_value < initial:
                break  # it has gained, and the last steps did not: answer now
            iterations += 1
            idle += 1
            group, generator = self._neighbourhood(search, [], starts, goals)
            self.rng.shuffle(group)
            _kept, trial_collisions, trial_soc = search.try_group(group, deadline)
            replans += len(group)
            value = trial_soc + weight * trial_collisions
            if generator in self.wheel.weights:
                self.wheel.reward(generator, (best_value - value) / len(group))
            if search.soc + weight * search.collisions < best_value:
                idle = 0
            best_value = search.soc + weight * search.collisions
        if not search.collisions:
            self._kept = KeptSearch(ids, moves, current, search)
        if best_value >= initial:
            return self._without_gain(search, current, block, data, (iterations, started))
        self._misses[block] = 0
        put_back = search.put_back(current)
        best = search.paths
        return Draft(
            block=block,
            # a robot the LNS left alone is null: it keeps whatever path it has when the answer arrives (with
            # overlapping leases another agent may have moved it), and encoding every path cost 11 ms a
            # proposal at 200 robots in one block, a fifth of the search's own set-up
            value=[
                None if p is c else [list(grid.xy(x)) for x in p] for p, c in zip(best, current, strict=True)
            ],
            predicted_improvement=initial - best_value,
            info={
                "iterations": iterations,
                "replans": replans,
                "seconds": time.perf_counter() - started,
                "table_seconds": t_table,
                "put_back": put_back,
                "resumed": resumed,
                "taken": taken,
                "reverted": reverted,
                "followed": followed,
                "destroy_weights": {k: round(v, 4) for k, v in self.wheel.weights.items()},
                **({"collisions": collisions} if collisions is not None else {}),
            },
        )
