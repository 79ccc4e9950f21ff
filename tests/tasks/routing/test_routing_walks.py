"""A walk along a plateau of equal costs survives the search that made it (``WalkMemory``,
``BlockSearch.adopt``): the next search of the same robots starts where the walk stopped, where it fits."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.engine.contract import contract_envelope
from coordinator.engine.rounds import RoundEngine
from tasks.registry import create_task
from tasks.routing.grid import Grid
from tasks.routing.lns import WalkMemory
from tasks.routing.occupancy import Path, full_conflicts
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations


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


def test_walk_memory_gives_a_walk_back_only_on_the_path_it_left() -> None:
    memory = WalkMemory()
    a, a_walked, b, b_longer = (1, 2, 3), (1, 4, 3), (5, 6), (5, 5, 6)
    memory.remember([10, 11], [a, b], [a_walked, b_longer])
    assert len(memory) == 1  # robot 11's cost changed: its path is the answer's, not a walk
    assert memory.walked([11, 10], [b, a]) == {1: a_walked}
    assert memory.walked([10], [(1, 7, 3)]) == {}  # the plan moved robot 10 meanwhile
    memory.remember([10], [a], [a])  # the walk came back to the plan's path
    assert len(memory) == 0


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
    """How many searches ``RoutingProposer`` builds, and what each adopted."""
    seen: dict[str, list[int]] = {"built": [], "adopted": []}
    init, adopt = BlockSearch.__init__, BlockSearch.adopt

    def built(self: BlockSearch, *args: Any, **kwargs: Any) -> None:
        seen["built"].append(1)
        init(self, *args, **kwargs)

    def adopted(self: BlockSearch, wanted: Any) -> int:
        seen["adopted"].append(adopt(self, wanted))
        return seen["adopted"][-1]

    monkeypatch.setattr(BlockSearch, "__init__", built)
    monkeypatch.setattr(BlockSearch, "adopt", adopted)
    return seen


def test_the_same_contract_again_goes_on_with_the_search_that_found_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One agent whose search found nothing meets the same plan again (nothing merged meanwhile): the next
    search is that search, gone on with, its walk whole; nothing is built again."""
    seen = _counting(monkeypatch)
    proposer, contract = _one_agent(stop_after=20)
    _until_a_search_finds_nothing(proposer, contract)
    walked = len(proposer.walks)
    assert walked > 0  # salted ties moved robots at equal cost
    built = len(seen["built"])
    _ids, plan, kept = proposer._unanswered[0]
    assert sum(p != c for p, c in zip(kept.paths, plan, strict=True)) == walked  # it holds the walk
    proposer.propose(contract)
    assert len(seen["built"]) == built  # no new search: the kept one went on


def test_a_walk_is_taken_up_again_where_the_plan_left_its_robots(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan changed elsewhere (another robot's run in the table): the next search is built anew and
    starts from the paths the walk reached, all of them but those that only fit together (two robots that
    swapped their ways: adopted one at a time, neither fits while the other is on its old path)."""
    seen = _counting(monkeypatch)
    proposer, contract = _one_agent(stop_after=20)
    _until_a_search_finds_nothing(proposer, contract)
    walked = len(proposer.walks)
    assert walked > 0
    built = len(seen["built"])
    data = contract["data"]
    goals = {tuple(r["goal"]) for r in data["robots"]}
    far = next((x, y) for x in range(32) for y in range(32) if (x, y) not in goals and (x, y) != (0, 0))
    data["reservations"] = {**data["reservations"], "moves": [[999, data["max_len"] + 50, [list(far)], 0]]}
    proposer.propose(contract)
    assert len(seen["built"]) == built + 1
    assert walked * 0.8 <= seen["adopted"][-1] <= walked
