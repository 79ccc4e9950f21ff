"""A team's search takes what merged while it runs (``RoutingProposer.feed``, ``head_changes``)."""

from __future__ import annotations

from typing import Any

from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Snapshot
from tasks.registry import create_task
from tasks.routing import RoutingTask
from tasks.routing.state import RoutingState


class ScriptedFeed:
    """A feed that tells one change (``changes``, from version 0 to 1) at its first ask, then nothing."""

    def __init__(self, changes: Any) -> None:
        self.version, self.asks, self._changes = 0, 0, changes

    def __call__(self) -> Any | None:
        self.asks += 1
        if self.version == 1:
            return None
        self.version = 1
        return self._changes


def team(blocks: int = 2) -> tuple[RoutingTask, RoutingState]:
    params = {"map": "random-32-32-10", "robots": 100, "blocks": blocks, "exact_limit": 0}
    task = create_task("routing", params)
    assert isinstance(task, RoutingTask)
    state = task.initial_state()
    formed = task.form_lease(state, 0, frozenset(), 0) if blocks > 1 else None
    return task, formed or state


def answer(task: RoutingTask, state: RoutingState, seed: int, feed: Any = None, **knobs: Any) -> Any:
    proposer = task.make_proposer(task.ProposerParams(time_budget=3.0, answer_after=6, **knobs), seed=seed)
    proposer.feed = feed
    snap = Snapshot(0, task.objective(state), (0,) * len(state.blocks), state)
    return proposer.propose(contract_envelope(task, snap, 0))


def merged(task: RoutingTask, state: RoutingState, draft: Any) -> RoutingState:
    return task.apply(state, {0: task.validate(0, draft.value)})


def test_head_changes_name_the_robots_whose_paths_differ() -> None:
    task, state = team()
    other = merged(task, state, answer(task, state, seed=2))
    changes = task.head_changes(state, other)["paths"]
    differ = {r for r in range(len(state.paths)) if state.paths[r] != other.paths[r]}
    assert differ and {int(r) for r in changes} == differ
    assert all(tuple(task.grid.cell(x, y) for x, y in p) == other.paths[int(r)] for r, p in changes.items())
    assert task.head_changes(other, other) == {"paths": {}}


def test_a_search_answers_on_the_head_its_feed_told_it_of() -> None:
    """Another agent merged while this search ran; its feed told it. The answer fits that head, not the
    lease's: applied to it, no collision, and it gains exactly what the answer says. Without the feed's shift
    of the starting sum of costs, the gain is off by what the other merge gained."""
    task, state = team()
    other = merged(task, state, answer(task, state, seed=2))
    assert task.objective(other) < task.objective(state)
    feed = ScriptedFeed(task.head_changes(state, other))
    draft = answer(task, state, seed=1, feed=feed, follow_every=0.001)
    assert feed.asks >= 2 and draft is not None and draft.info["followed"] == 1
    after = merged(task, other, draft)
    assert after.conflicts == 0
    assert task.objective(after) == task.objective(other) - draft.predicted_improvement


def test_one_agent_and_a_zero_interval_never_ask() -> None:
    for (task, state), knobs in ((team(blocks=1), {"follow_every": 0.001}), (team(), {"follow_every": 0.0})):
        feed = ScriptedFeed({"paths": {}})
        answer(task, state, seed=1, feed=feed, stop_after=20, **knobs)
        assert feed.asks == 0
