"""Overlapping leases (routing, ``lease_overlap``): a lease's robots are drawn from the whole plan, robots
other agents hold included, as DROP-LNS's workers draw their neighbourhoods; what two answers both touched
is settled when they arrive.

Invariants: an answer writes only the robots it changed (null: "keep the path it has then"), so it never
moves back a robot another answer moved; the head's blocks are still whatever each lease was granted.
"""

from __future__ import annotations

from typing import Any

import pytest

from tasks.base import InvalidProposal
from tasks.registry import create_task
from tasks.routing.task import RoutingTask
from tests.conftest import Coordinator
from tests.coordinator.runtime.test_neighbourhood_leases import ROUTING, leases_at_once

OVERLAP = {**ROUTING, "lease_overlap": True, "lease_robots": 25, "opening": False}
"""Leases of 25 of the 40 robots from the first lease on (no opening): any two share at least ten."""


def _task(params: dict[str, Any]) -> RoutingTask:
    task = create_task("routing", params)
    assert isinstance(task, RoutingTask)
    return task


def test_an_overlapping_lease_draws_robots_that_other_blocks_hold() -> None:
    task = _task(OVERLAP)
    state = task.initial_state()
    held = frozenset({1, 2, 3})
    formed = task.form_lease(state, 0, held, 0)
    assert formed is not None and len(formed.blocks[0]) == 25
    others = {r for b in held for r in state.blocks[b]}
    assert set(formed.blocks[0]) & others  # (exclusive leases never take these: test_neighbourhood_leases)
    assert formed.blocks[1:] == state.blocks[1:]  # the others keep theirs
    assert task.objective(formed) == task.objective(state)
    exclusive = _task(ROUTING).form_lease(state, 0, held, 0)
    assert exclusive is None or not set(exclusive.blocks[0]) & others


def test_concurrent_overlapping_leases_over_http_share_robots_as_granted(coordinator: Coordinator) -> None:
    held = leases_at_once(coordinator, OVERLAP, 3)
    assert all(len(m) == 25 for m in held)
    assert held[0] & held[1] and held[1] & held[2]


def _waited(path: tuple[int, ...]) -> tuple[int, ...]:
    """The same route, one step later (a wait at the start): legal, one longer."""
    return (path[0], *path)


def test_a_null_keeps_the_path_another_answer_gave_a_shared_robot() -> None:
    """Block 1's agent moved robot r (merged); block 0's answer, drafted before, left r alone: with a null r
    keeps block 1's path, where the contract's old path would have moved it back."""
    task = _task(OVERLAP)
    base = task.form_lease(task.initial_state(), 1, frozenset(), 0)
    assert base is not None
    base = task.form_lease(base, 0, frozenset({1}), 0)
    assert base is not None
    shared = sorted(set(base.blocks[0]) & set(base.blocks[1]))
    assert shared
    r = shared[0]
    value_1 = tuple(_waited(base.paths[x]) if x == r else None for x in base.blocks[1])
    after = task.apply(base, {1: value_1})
    assert after.paths[r] == _waited(base.paths[r])
    nulls = tuple(None for _ in base.blocks[0])
    assert task.apply(after, {0: nulls}).paths[r] == after.paths[r]  # kept
    full = tuple(base.paths[x] for x in base.blocks[0])  # what a full answer drafted on the base says
    assert task.apply(after, {0: full}).paths[r] == base.paths[r]  # moved back
    assert task.written_elements(after, 0, nulls) == frozenset()
    assert task.footprint(after, 0, nulls) == frozenset()


def test_the_heuristic_answers_null_for_the_robots_it_left_alone() -> None:
    task = _task({**ROUTING, "initial": "shortest"})  # every robot on its shortest path: collisions to repair
    state = task.initial_state()
    proposer = task.make_proposer(task.ProposerParams(time_budget=0.5), seed=1)
    drafts = [
        proposer.propose({"block": b, "version": 0, "budget": {}, "data": task.contract(state, b)})
        for b in range(len(state.blocks))
    ]
    b, draft = next((b, d) for b, d in enumerate(drafts) if d is not None)
    value = task.validate(b, draft.value)
    changed = [p for p in value if p is not None]
    assert changed and len(changed) < len(value)
    for robot, p in zip(state.blocks[b], value, strict=True):
        assert p is None or p != state.paths[robot]
    assert task.evaluate_change(state, {b: value}) < task.objective(state)


def test_stored_blocks_may_overlap_only_where_leases_do() -> None:
    overlap, exclusive = _task(OVERLAP), _task(ROUTING)
    state = overlap.form_lease(overlap.initial_state(), 0, frozenset({1, 2, 3}), 0)
    assert state is not None
    dumped = overlap.dump_state(state)
    assert overlap.load_state(dumped).blocks == state.blocks
    with pytest.raises(InvalidProposal, match="partition"):
        exclusive.load_state(dumped)
    bad = {**dumped, "blocks": [[0, 0], *dumped["blocks"][1:]]}
    with pytest.raises(InvalidProposal, match="non-empty sets of robots"):
        overlap.load_state(bad)


@pytest.mark.parametrize("blocks", [1, 3, 17])
def test_an_overlapping_lease_holds_every_robot_unless_told_fewer(blocks: int) -> None:
    """Whatever the team, a lease is the whole plan (each agent keeps one walk over it); ``lease_robots``
    makes it smaller (a team then opens with whole-plan leases: tests/tasks/routing/test_routing_opening.py).
    """
    task = _task({**ROUTING, "lease_overlap": True, "blocks": blocks})
    assert task.lease_robots == 40
    state = task.form_lease(task.initial_state(), 0, frozenset(), 0)
    assert state is None or state.blocks[0] == tuple(range(40))
    assert _task({**OVERLAP, "blocks": blocks}).lease_robots == 25  # given: as given


def test_one_agents_lease_holds_every_robot_without_drawing_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing all 300 robots by walks on every lease kept one agent's coordinator 8 % busy for nothing."""
    import tasks.routing.lease as lease_module

    def no_draw(*_: object) -> list[int]:
        raise AssertionError("a lease of every robot needs no draw")

    task = _task({**ROUTING, "lease_overlap": True, "blocks": 1})
    monkeypatch.setattr(lease_module, "lease_members", no_draw)
    assert task.form_lease(task.initial_state(), 0, frozenset(), 0) is None
