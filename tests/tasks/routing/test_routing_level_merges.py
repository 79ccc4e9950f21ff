"""Level merges (``LevelMerges``): a team's whole-plan search that kept the sum of costs answers where its
walk went, and the coordinator merges it, so that the plan walks with every agent's search. The books count
only improvements: a level merge moves the head (a new version) and no merge count, stall count or curve
point."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.engine.records import Proposal, Snapshot
from coordinator.engine.rounds import RoundEngine
from tasks import capabilities
from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.grid import Grid
from tasks.routing.lns import RoutingProposer
from tasks.routing.occupancy import Path
from tasks.routing.opening import WALK_SECONDS
from tasks.routing.repair import BlockSearch
from tasks.routing.reservations import Reservations

TEAM = {"map": "random-32-32-10", "robots": 40, "blocks": 3, "exact_limit": 0, "level_merges": True}


def routing(**params: Any) -> RoutingTask:
    task = create_task("routing", {**TEAM, **params})
    assert isinstance(task, RoutingTask)
    return task


def level_step(task: RoutingTask, snap: Snapshot, block: int) -> tuple[int, Path]:
    """A robot of ``block`` and another path for it of the same length that collides with nobody: one corner
    of its path turned the other way (right then up becomes up then right) through a free cell."""
    grid, state = task.grid, snap.state
    for r in state.blocks[block]:
        p = state.paths[r]
        for i in range(len(p) - 2):
            a, b, c = p[i], p[i + 1], p[i + 2]
            if a == b or b == c or (c - b) == (b - a):  # a wait or a straight line: no corner
                continue
            other = a + (c - b)
            if other == b or other not in grid.moves(a) or c not in grid.moves(other):
                continue
            moved = (*p[: i + 1], other, *p[i + 2 :])
            value = tuple(moved if q == r else None for q in state.blocks[block])
            if task.evaluate_change(state, {block: value}) == snap.objective:
                return r, moved
    raise AssertionError("no level step in this block")


def answer(task: RoutingTask, snap: Snapshot, block: int, paths: dict[int, Path]) -> Proposal:
    value = tuple(paths.get(r) for r in snap.state.blocks[block])
    return Proposal(
        id=f"p{block}", agent="a", block=block, value=task.encode_value(value), base_version=snap.version,
        predicted_improvement=0.0,
    )  # fmt: skip


def test_a_level_answer_moves_the_head_and_no_count() -> None:
    task = routing()
    assert capabilities.offers(task, capabilities.LevelMerges)
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    robot, moved = level_step(task, snap, 0)
    out = engine.run_round(snap, [answer(task, snap, 0, {robot: moved})], 0)
    verdict = out.verdicts[0]
    assert verdict.status == "accepted" and "level" in verdict.reason and verdict.delta == 0
    assert out.committed and out.snapshot.version == snap.version + 1
    assert out.snapshot.objective == snap.objective and out.snapshot.state.paths[robot] == moved
    # the books count improvements: this round merged none, so the run's stall count goes on
    assert out.record.accepted == 0 and out.record.merge_kind == "none"


def test_without_level_merges_or_with_nothing_moved_the_answer_is_not_improving() -> None:
    """The parameter turns level merges off (the kind then refuses what does not improve, as every kind
    without ``LevelMerges`` does); with them on, an answer that moves no robot is still refused."""
    off = routing(level_merges=False)
    engine = RoundEngine(off)
    snap = engine.initial_snapshot()
    robot, moved = level_step(off, snap, 0)
    out = engine.run_round(snap, [answer(off, snap, 0, {robot: moved})], 0)
    assert out.verdicts[0].code == "not_improving" and not out.committed

    on = routing()
    engine = RoundEngine(on)
    snap = engine.initial_snapshot()
    robot = snap.state.blocks[0][0]
    same = answer(on, snap, 0, {robot: snap.state.paths[robot]})  # its current path, sent again
    out = engine.run_round(snap, [same], 0)
    assert out.verdicts[0].code == "not_improving" and not out.committed


def test_a_stale_level_answer_keeps_what_fits_level() -> None:
    """An answer computed before another merge moves one robot level and gives another a shortest path that
    crosses a robot: on the head the rebase puts the second back and keeps the level step, which merges."""
    task = routing()
    engine = RoundEngine(task)
    snap0 = engine.initial_snapshot()
    first, first_moved = level_step(task, snap0, 0)
    head = engine.run_round(snap0, [answer(task, snap0, 0, {first: first_moved})], 0).snapshot
    robot, moved = level_step(task, head, 1)
    grid, inst, plan = task.grid, task.inst, head.state

    def shortest(r: int) -> Path:
        return tuple(grid.shortest_path(inst.starts[r], inst.goals[r]))

    crossing = next(
        r for r in plan.blocks[1] if r != robot and plan.index.cross_conflicts({r: shortest(r)}, {r})
    )
    late = answer(task, snap0, 1, {robot: moved, crossing: shortest(crossing)})
    out = engine.run_round(head, [late], 1)
    verdict = out.verdicts[0]
    assert verdict.status == "accepted" and "level" in verdict.reason and verdict.rebased
    assert out.snapshot.state.paths[robot] == moved
    assert out.snapshot.state.paths[crossing] == plan.paths[crossing]
    assert out.snapshot.objective == head.objective


@pytest.mark.parametrize(
    ("params", "whole", "walk"),
    [
        ({}, True, True),
        ({"level_merges": False}, True, False),
        ({"blocks": 1}, True, False),
        ({}, False, False),
    ],
)
def test_only_a_teams_whole_plan_lease_asks_for_its_walk_after_a_short_search(
    params: dict[str, Any], whole: bool, walk: bool
) -> None:
    task = routing(**params)
    state = task.initial_state()
    if whole:  # a lease of every robot, as a team's leases are by default
        leased = task.form_lease(state, 0, frozenset(), 0)
        state = leased if leased is not None else state
    assert (len(state.blocks[0]) == len(state.paths)) == (whole or task.n_blocks == 1)
    contract = task.contract(state, 0)
    assert bool(contract.get("answer_walk")) == walk
    assert (contract.get("search_seconds") == WALK_SECONDS) == walk
    if walk:  # the proposer's budget is the contract's, whatever its own (0.5 s by default)
        proposer = task.make_proposer(task.ProposerParams(), seed=1)
        assert proposer._budget({"block": 0, "data": contract}, 0) == WALK_SECONDS


def test_a_search_that_kept_the_sum_of_costs_answers_the_walk_that_cannot_go_back() -> None:
    """Two robots on an open 4 x 4 grid both turned their corners the other way: each one's old path now
    crosses the other's new one, so neither goes back (``put_back``) and the answer holds both, predicting 0.
    A walk whose robots all fit back went nowhere: no answer."""
    grid = Grid.from_rows(["...."] * 4)
    starts, goals = [0, 1], [5, 4]
    before: list[Path] = [(0, 1, 5), (1, 5, 4)]
    turned: dict[int, Path] = {0: (0, 4, 5), 1: (1, 0, 4)}
    proposer = RoutingProposer(grid, time_budget=0.1, neighbourhood=2, max_len=8)
    search = BlockSearch(grid, starts, goals, before, Reservations(grid.n_cells), 8)
    search._replace(turned)
    assert search.collisions == 0 and search.soc == 4
    draft = proposer._walk(search, before, 0, 1, 0.0)
    assert draft is not None and draft.predicted_improvement == 0.0 and draft.info["walk"]
    assert draft.value == [[list(grid.xy(c)) for c in turned[r]] for r in (0, 1)]
    alone = BlockSearch(grid, starts[:1], goals[:1], before[:1], Reservations(grid.n_cells), 8)
    alone._replace({0: turned[0]})  # robot 0 alone on the grid turned: its old path fits, and it goes back
    assert alone.soc == 2 and proposer._walk(alone, before[:1], 0, 1, 0.0) is None
