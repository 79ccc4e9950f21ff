"""A walk along a plateau of equal costs survives the end of a search: the next search on a contract with the
same robots and table goes on with it (``RoutingProposer._kept``), taking in what merged meanwhile
(``BlockSearch.follow``); ``BlockSearch.adopt``, which ``put_back`` is, takes only paths of equal cost that
fit."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from coordinator.engine.contract import contract_envelope
from coordinator.engine.rounds import RoundEngine
from tasks.registry import create_task
from tasks.routing.grid import Grid
from tasks.routing.occupancy import Path, full_conflicts
from tasks.routing.repair import BlockSearch, prioritized
from tasks.routing.reservations import Reservations
from tests.routing_reference import reference_follow


def _open_grid() -> tuple[Grid, list[int], list[int], list[Path]]:
    """Two robots on an open 6x6 grid: robot 0 crosses it from the top left corner to the bottom right
    (along the top row, then down), robot 1 stays parked on cell 32 (bottom row)."""
    grid = Grid.from_rows(["......"] * 6)
    starts, goals = [0, 32], [35, 32]
    return grid, starts, goals, [tuple(grid.shortest_path(s, g)) for s, g in zip(starts, goals, strict=True)]


def test_adopt_takes_a_path_of_equal_cost_that_fits_and_refuses_the_others() -> None:
    grid, starts, goals, first = _open_grid()
    assert first == [(0, 1, 2, 3, 4, 5, 11, 17, 23, 29, 35), (32,)]
    search = BlockSearch(grid, starts, goals, first, Reservations(grid.n_cells), 40)
    stairs = (0, 1, 2, 3, 4, 10, 11, 17, 23, 29, 35)  # as short, away from robot 1
    assert search.adopt({0: stairs, 1: (32, 32)}) == 1  # robot 1 waiting a step would cost one more
    assert search.paths == [stairs, (32,)] and search.soc == 10 and search.collisions == 0
    down_then_right = (0, 6, 12, 18, 24, 30, 31, 32, 33, 34, 35)  # as short, through robot 1's cell
    assert full_conflicts(grid.n_cells, {0: down_then_right, 1: (32,)}) > 0
    assert search.adopt({0: down_then_right}) == 0 and search.paths[0] == stairs


def _one_agent(stop_after: int) -> tuple[Any, dict[str, Any]]:
    params = {"map": "random-32-32-10", "robots": 60, "blocks": 1, "exact_limit": 0, "seed": 2}
    task = create_task("routing", params)
    snap = RoundEngine(task).initial_snapshot()
    proposer = task.make_proposer(task.ProposerParams(time_budget=5.0, stop_after=stop_after), seed=3)
    return proposer, contract_envelope(task, snap, 0)


def _until_a_search_finds_nothing(proposer: Any, contract: dict[str, Any]) -> None:
    """Searches ``contract``, each answer merged into it as the coordinator would, until one finds nothing."""
    robots = contract["data"]["robots"]  # one block: every robot, and nothing in the reservation table
    for _ in range(60):
        draft = proposer.propose(contract)
        if draft is None:
            return
        for robot, path in zip(robots, draft.value, strict=True):
            if path is not None:
                robot["path"] = path
    pytest.fail("60 searches in a row gained on a 60-robot plan")


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """How many searches ``RoutingProposer`` builds."""
    seen: dict[str, list[int]] = {"built": []}
    init = BlockSearch.__init__

    def built(self: BlockSearch, *args: Any, **kwargs: Any) -> None:
        seen["built"].append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(BlockSearch, "__init__", built)
    return seen


def test_the_same_contract_again_goes_on_with_the_search_that_found_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One agent whose search found nothing meets the same plan again (nothing merged meanwhile): the next
    search is that search, gone on with, its walk whole; nothing is built again."""
    seen = _counting(monkeypatch)
    proposer, contract = _one_agent(stop_after=20)
    _until_a_search_finds_nothing(proposer, contract)
    built = len(seen["built"])
    assert proposer._kept is not None
    plan, kept = proposer._kept.plan, proposer._kept.search
    walked = list(kept.paths)
    assert walked != plan  # salted ties moved robots at equal cost: the kept search holds the walk
    proposer.stop_after = 1  # one step: the search that follows starts where the walk stopped
    proposer.propose(contract)
    assert len(seen["built"]) == built  # no new search: the kept one went on


def test_a_changed_contract_gets_a_new_search_from_its_own_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan changed elsewhere (another robot's run in the table): the kept search no longer fits it, so
    the next search is built anew, from the contract's paths."""
    seen = _counting(monkeypatch)
    proposer, contract = _one_agent(stop_after=20)
    _until_a_search_finds_nothing(proposer, contract)
    built = len(seen["built"])
    data = contract["data"]
    goals = {tuple(r["goal"]) for r in data["robots"]}
    far = next((x, y) for x in range(32) for y in range(32) if (x, y) not in goals and (x, y) != (0, 0))
    data["reservations"] = {**data["reservations"], "moves": [[999, data["max_len"] + 50, [list(far)], 0]]}
    proposer.stop_after = 1
    draft = proposer.propose(contract)
    assert len(seen["built"]) == built + 1
    assert draft is None or draft.info["resumed"] == 0


def test_follow_takes_what_merged_and_puts_back_only_the_walked_robots_in_its_way() -> None:
    """Robot 0 walked to ``stairs`` and robot 2 to ``right_down``, both at equal cost; meanwhile another agent
    merged a new path for robot 1 that crosses ``stairs`` (cell 10 at step 5) but not robot 0's plan path.
    Following the merge, robot 1 takes its new path, robot 0 goes back to its plan path, robot 2 keeps its
    walk."""
    grid = Grid.from_rows(["......"] * 6)
    starts, goals = [0, 16, 18], [35, 16, 33]
    top_then_down, stairs = (0, 1, 2, 3, 4, 5, 11, 17, 23, 29, 35), (0, 1, 2, 3, 4, 10, 11, 17, 23, 29, 35)
    down_right, right_down = (18, 24, 30, 31, 32, 33), (18, 19, 20, 21, 27, 33)
    before: list[Path] = [top_then_down, (16,), down_right]
    now: list[Path] = [top_then_down, (16, 16, 16, 16, 16, 10, 16), down_right]
    assert full_conflicts(grid.n_cells, dict(enumerate(now))) == 0
    assert full_conflicts(grid.n_cells, {0: stairs, 1: now[1], 2: right_down}) > 0  # the walk is in the way
    search = BlockSearch(grid, starts, goals, before, Reservations(grid.n_cells), 40)
    assert search.adopt({0: stairs, 2: right_down}) == 2
    assert search.follow(before, now) == (1, 1)
    assert search.paths == [top_then_down, now[1], right_down]
    assert search.paths[0] is now[0] and search.paths[1] is now[1]  # an answer leaves these out
    assert search.collisions == 0 and search.soc == 10 + 6 + 5
    rebuilt = BlockSearch(grid, starts, goals, search.paths, Reservations(grid.n_cells), 40)
    assert search.index.total_conflicts() == rebuilt.index.total_conflicts() == 0


def test_follow_puts_back_walked_robots_that_collided_before_the_merge_too() -> None:
    """A search that already had a collision (robot 1 walked head-on into robot 0) follows a merge that moved
    only robot 2, far away: the collision is not the merge's, and robot 1 still goes back to its plan path, so
    that a collision-free plan is followed to a collision-free search."""
    grid = Grid.from_rows(["......"] * 6)
    starts, goals = [0, 5, 30], [5, 0, 35]
    before: list[Path] = [(0, 1, 2, 3, 4, 5), (5, 11, 10, 9, 8, 7, 6, 0), (30, 31, 32, 33, 34, 35)]
    now: list[Path] = [before[0], before[1], (30, 30, 31, 32, 33, 34, 35)]
    assert full_conflicts(grid.n_cells, dict(enumerate(now))) == 0
    head_on: list[Path] = [before[0], (5, 4, 3, 2, 1, 0), before[2]]
    search = BlockSearch(grid, starts, goals, head_on, Reservations(grid.n_cells), 40)
    assert search.collisions > 0
    assert search.follow(before, now) == (1, 1)
    assert search.paths == now and search.collisions == 0


def test_a_merge_on_the_same_robots_is_followed_not_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another agent on a whole-plan lease merged a change to one robot: the next contract holds the same
    robots against the same (empty) table, so the kept search takes the change in and goes on; nothing is
    built again, and the answer is measured from the contract's plan."""
    seen = _counting(monkeypatch)
    proposer, contract = _one_agent(stop_after=20)
    _until_a_search_finds_nothing(proposer, contract)
    built = len(seen["built"])
    robots = contract["data"]["robots"]
    other = proposer._kept.search  # type: ignore[union-attr]
    grid = proposer.grid

    def plan(paths: list[list[list[int]]]) -> dict[int, Path]:
        return {i: tuple(grid.cell(x, y) for x, y in p) for i, p in enumerate(paths)}

    paths = [r["path"] for r in robots]
    for moved, path in enumerate(paths):  # a robot that can wait a step first without a collision
        waits = [*paths[:moved], [path[0], *path], *paths[moved + 1 :]]
        if len(path) > 3 and full_conflicts(grid.n_cells, plan(waits)) == 0:
            break
    robots[moved] = {**robots[moved], "path": waits[moved]}
    proposer.stop_after = 1
    draft = proposer.propose(contract)
    assert len(seen["built"]) == built
    assert proposer._kept is not None and proposer._kept.search is other
    assert other.paths[moved] == tuple(grid.cell(x, y) for x, y in robots[moved]["path"]) or draft is not None
    assert other.soc == sum(len(p) - 1 for p in other.paths) and other.collisions == 0


def _walked(grid: Grid, starts: list[int], goals: list[int], plan: list[Path], seed: int) -> BlockSearch:
    """A search of ``plan`` after a few salted LNS steps: robots moved along plateaus, some gains."""
    rng = random.Random(seed)
    search = BlockSearch(grid, starts, goals, plan, Reservations(grid.n_cells), 40, rng=rng)
    for _ in range(6):
        search.try_group(rng.sample(range(len(plan)), min(3, len(plan))), None)
    return search


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robots=st.integers(2, 9), seed=st.integers(0, 10**6), broken=st.booleans())
def test_follow_from_a_clean_search_ends_as_counting_every_change_did(
    robots: int, seed: int, broken: bool
) -> None:
    """A collision-free search follows another agent's merges (``now``, itself collision-free, or, with
    ``broken``, holding a collision of its own): the robots taken and put back, the paths, the conflicts and
    the sum of costs are those of the follow that counted every change's conflicts (``reference_follow``), and
    the conflicts kept are the index's."""
    rng = random.Random(seed)
    grid = Grid.from_rows(["......", ".@..@.", "......", "..@...", "......"])
    cells = [c for c in range(grid.n_cells) if grid.free[c]]
    ends = rng.sample(cells, 2 * robots)
    starts, goals = ends[:robots], ends[robots:]
    plan = prioritized(grid, starts, goals, 40, soft=True)
    assert plan is not None
    search = _walked(grid, starts, goals, plan, seed)
    assume(search.collisions == 0)
    now = list(_walked(grid, starts, goals, plan, seed + 1).paths)
    if broken:  # robot i waits at its start until a robot ``now`` moved too passes there: they collide
        i = rng.randrange(robots)  # (its own start and goal: the index parks one robot per goal)
        moved = [now[j] for j in range(robots) if j != i and now[j] != plan[j]]
        waits = ((now[i][0],) * k + now[i] for k in range(1, 41))
        hits = (w for w in waits if any(full_conflicts(grid.n_cells, {0: w, 1: m}) for m in moved))
        path = next(hits, None)
        assume(path is not None)
        now[i] = path
    reference = copy.deepcopy(search)
    assert search.follow(plan, now) == reference_follow(reference, plan, now)
    assert search.paths == reference.paths and search.ext == reference.ext
    assert (search.inside, search.soc) == (reference.inside, reference.soc)
    assert search.inside == search.index.total_conflicts()
    if broken:  # the two robots both follow ``now``: its collision stays, and is counted
        assert search.inside > 0
