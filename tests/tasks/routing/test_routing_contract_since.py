"""Contracts written since the one an agent keeps (``ContractDeltas``): a whole-plan contract for an agent
whose proposer kept its last one carries paths only for the robots that changed, and the proposer reads it
as the whole contract (the same robots, starts, goals and paths)."""

from __future__ import annotations

import json
import logging
import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Snapshot
from tasks import capabilities
from tasks.routing import RoutingTask
from tasks.routing.lns import RoutingProposer
from tests.tasks.routing.test_routing_incremental import _naive_robots, _random_walk_path, _task
from tests.tasks.routing.test_routing_level_merges import level_step, routing


def whole_plan(task: RoutingTask, version: int = 3) -> Snapshot:
    first = task.initial_state()
    whole = task.form_lease(first, 0, frozenset(), 0)
    assert whole is not None and len(whole.blocks[0]) == task.inst.n_robots
    return Snapshot(version, task.objective(first), (version,) * task.n_blocks, whole)


def walked(task: RoutingTask, snap: Snapshot) -> tuple[int, Snapshot]:
    """``snap`` with one robot on another path of the same length (a later head), and that robot."""
    robot, moved = level_step(task, snap, 0)
    paths = list(snap.state.paths)
    paths[robot] = moved
    state = replace(snap.state, paths=tuple(paths))
    return robot, Snapshot(snap.version + 2, snap.objective, snap.block_versions, state)


def proposer(task: RoutingTask, **knobs: Any) -> RoutingProposer:
    made = task.make_proposer(task.ProposerParams(time_budget=0.05, **knobs), seed=7)
    assert isinstance(made, RoutingProposer)
    return made


def test_a_contract_since_a_kept_one_carries_only_the_changed_paths() -> None:
    task = routing()
    before = whole_plan(task)
    robot, after = walked(task, before)
    envelope = contract_envelope(task, after, 0, since=before)
    whole = contract_envelope(task, after, 0)
    assert envelope["since"] == before.version and "since" not in whole
    written = envelope["data"]
    assert json.loads(written.json) == dict(written)  # the text says what the dict says
    with_paths = [r["id"] for r in written["robots"] if "path" in r]
    assert with_paths == [robot]
    assert [r["id"] for r in written["robots"]] == [r["id"] for r in whole["data"]["robots"]]
    assert len(written.json) < len(whole["data"].json) / 4
    assert {k: v for k, v in written.items() if k != "robots"} == {
        k: v for k, v in whole["data"].items() if k != "robots"
    }


def test_a_lease_of_part_of_the_plan_is_written_whole() -> None:
    task = routing(lease_robots=10, opening=False)
    first = task.initial_state()
    part = task.form_lease(first, 0, frozenset(), 0)
    assert part is not None and len(part.blocks[0]) == 10
    snap = Snapshot(1, task.objective(first), (1,) * task.n_blocks, part)
    assert task.contract_since(first, part, 0) is None
    envelope = contract_envelope(task, snap, 0, since=snap)
    assert "since" not in envelope and all("path" in r for r in envelope["data"]["robots"])


def test_a_kind_without_it_writes_every_contract_whole() -> None:
    from tasks.registry import create_task

    task = create_task("quadratic", {"blocks": 3, "dim": 2})
    assert not capabilities.offers(task, capabilities.ContractDeltas)
    snap = Snapshot(2, task.objective(task.initial_state()), (2, 2, 2), task.initial_state())
    assert "since" not in contract_envelope(task, snap, 0, since=snap)


def test_the_proposer_reads_a_contract_since_as_the_whole_one() -> None:
    """Two agents, one given the second contract written since the first and one given it whole: they keep the
    same robots, starts, goals and paths, and the robots that did not change keep the very path tuples the
    first contract gave (a search following the plan tells changes apart by identity)."""
    task = routing()
    before = whole_plan(task)
    robot, after = walked(task, before)
    reads_changes, reads_whole = proposer(task), proposer(task)
    for agent in (reads_changes, reads_whole):
        agent.propose(contract_envelope(task, before, 0))
        assert agent.contract_kept == before.version
    kept_before = reads_changes.contracts.kept
    reads_changes.propose(contract_envelope(task, after, 0, since=before))
    reads_whole.propose(contract_envelope(task, after, 0))
    changes, whole = reads_changes.contracts.kept, reads_whole.contracts.kept
    assert changes is not None and whole is not None and kept_before is not None
    assert changes == whole and changes.version == after.version
    assert changes.paths == dict(enumerate(after.state.paths))
    assert all(changes.paths[r] is kept_before.paths[r] for r in changes.paths if r != robot)


def test_a_contract_since_a_version_it_does_not_keep_finds_nothing_and_asks_whole_next(
    caplog: pytest.LogCaptureFixture,
) -> None:
    task = routing()
    before = whole_plan(task)
    _, after = walked(task, before)
    agent = proposer(task)
    agent.propose(contract_envelope(task, before, 0))
    elsewhere = Snapshot(before.version - 1, before.objective, before.block_versions, before.state)
    with caplog.at_level(logging.WARNING, "blockopt.agent"):
        assert agent.propose(contract_envelope(task, after, 0, since=elsewhere)) is None
    assert agent.contract_kept is None
    assert f"written since version {elsewhere.version}, and this agent keeps {before.version}" in caplog.text


def test_an_agent_told_to_keep_nothing_never_asks_for_changes() -> None:
    task = routing()
    agent = proposer(task, keep_contract=False)
    agent.propose(contract_envelope(task, whole_plan(task), 0))
    assert agent.contract_kept is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), leases=st.integers(1, 6))
def test_every_contract_written_since_reads_as_the_definition(seed: int, leases: int) -> None:
    """One block of every robot: between two leases one to three heads pass, each moving a random few robots
    (some back to a path they had); every contract written since the last one the agent read gives it the
    robots, starts, goals and paths of the plan by the definition (``_naive_robots``)."""
    rng = random.Random(seed)
    task = _task(24, 1)
    state = task.initial_state()
    agent = proposer(task)
    held = Snapshot(0, 0.0, (0,), state)
    agent.contracts.read(contract_envelope(task, held, 0))
    version = 0
    for _ in range(leases):
        for _ in range(rng.randint(1, 3)):
            moved = set(rng.sample(range(24), rng.randint(0, 6)))
            back = {r: held.state.paths[r] for r in rng.sample(range(24), 2)}  # some as the agent holds them
            value = tuple(
                back.get(r, _random_walk_path(task, r, rng) if r in moved else state.paths[r])
                for r in state.blocks[0]
            )
            state = task.apply(state, {0: value})
            version += 1
        head = Snapshot(version, 0.0, (version,), state)
        envelope = contract_envelope(task, head, 0, since=held)
        assert envelope["since"] == held.version
        ids, starts, goals, paths = agent.contracts.read(envelope)
        xy = task.grid.xy
        read = [
            {"id": r, "start": list(xy(s)), "goal": list(xy(g)), "path": [list(xy(c)) for c in p]}
            for r, s, g, p in zip(ids, starts, goals, paths, strict=True)
        ]
        assert read == _naive_robots(task, state.paths, 0)
        assert agent.contracts.version == version
        held = head
