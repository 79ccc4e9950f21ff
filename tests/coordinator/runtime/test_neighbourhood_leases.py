"""Neighbourhood leases (async mode, routing): each lease's block is formed at lease time from the robots no
other agent holds, and a stale answer is rebased on the head instead of refused.

Invariants: no robot is in two live leases, and a leased block keeps its robots until its answer is scored,
whatever other agents lease, answer or give up meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Snapshot
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask, JoinRequest, LeaseGrant, ProposalIn
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore
from coordinator.store.base import AgentRecord
from tasks import capabilities
from tasks.quadratic import QuadraticTask
from tasks.registry import create_task
from tests.conftest import Coordinator
from tests.coordinator.api.test_service_api import lease

ROUTING = {
    "map": "random-32-32-10",
    "robots": 40,
    "blocks": 4,
    "seed": 1,
    "exact_limit": 0,
    "lease_overlap": False,
}
"""Four blocks of a 40-robot plan with delay (prioritized first plan): room for three agents at once, each
lease exclusive (``test_overlapping_leases.py`` has the overlapping ones)."""


def members(grant: dict[str, Any] | LeaseGrant) -> set[int]:
    contract = grant["contract"] if isinstance(grant, dict) else grant.contract
    return {r["id"] for r in contract["data"]["robots"]}


def leases_at_once(coordinator: Coordinator, params: dict[str, Any], agents: int) -> list[set[int]]:
    """``agents`` agents of a new async routing task lease at the same moment over HTTP: the robots each
    was granted, after checking that the head holds each leased block as granted."""
    task = coordinator.create_task(kind="routing", params=params, mode="async")
    tid = task["id"]
    clients = [coordinator.join(task, f"a{i}")[0] for i in range(agents)]
    grants: list[dict[str, Any]] = [{} for _ in clients]

    def take(i: int) -> None:
        grants[i] = lease(clients[i], tid)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(agents)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = [members(g) for g in grants]
    blocks = coordinator.admin.get(f"/v1/tasks/{tid}/solution").json()["solution"]["blocks"]
    for g, mine in zip(grants, held, strict=True):
        assert set(blocks[g["block"]]) == mine
    return held


def test_concurrent_leases_over_http_never_share_a_robot(coordinator: Coordinator) -> None:
    held = leases_at_once(coordinator, ROUTING, 3)
    assert all(held)
    assert not (held[0] & held[1] or held[0] & held[2] or held[1] & held[2])


async def _service(params: dict[str, Any], agents: int) -> tuple[CoordinatorService, str, list[AgentRecord]]:
    service = CoordinatorService(ServiceSettings(), MemoryStore(), ServiceMetrics(CollectorRegistry()))
    spec, join, _ = await service.create(CreateTask(kind="routing", params=params, mode="async"))
    records = []
    for i in range(agents):
        joined = await service.join(spec.id, join, JoinRequest(name=f"a{i}"))
        records.append(await service.authenticate(spec.id, f"Bearer {joined.token}"))
    return service, spec.id, records


OPS = st.lists(st.tuples(st.sampled_from(["lease", "release", "answer"]), st.integers(0, 2)), max_size=14)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_no_robot_is_in_two_live_leases_whatever_agents_lease_answer_or_release(
    ops: list[tuple[str, int]],
) -> None:
    """Leases, answers (the block's paths as they are: scored and refused as not improving) and releases
    in any order: the live leases' robots stay disjoint, and each stays what it was granted."""

    async def run() -> None:
        service, tid, agents = await _service(ROUTING, 3)
        live: dict[int, LeaseGrant] = {}
        try:
            for op, i in ops:
                grant = live.get(i)
                if op == "lease" and grant is None:
                    live[i] = await service.lease(tid, agents[i])
                elif op == "release" and grant is not None:
                    await service.release(tid, agents[i], live.pop(i).lease_id)
                elif op == "answer" and grant is not None:
                    paths = [r["path"] for r in grant.contract["data"]["robots"]]
                    body = ProposalIn(
                        lease_id=grant.lease_id, block=grant.block, base_version=grant.version,
                        value=paths, predicted_improvement=0.0,
                    )  # fmt: skip
                    await service.submit(tid, agents[i], body, wait=5.0)
                    del live[i]
                head = await service.store.get_head(tid)
                granted = [members(g) for g in live.values()]
                assert sum(len(m) for m in granted) == len(set().union(*granted))  # disjoint
                for g, mine in zip(live.values(), granted, strict=True):
                    assert set(head.state["blocks"][g.block]) == mine  # kept while leased
                assert sorted(r for b in head.state["blocks"] for r in b) == list(range(ROUTING["robots"]))
        finally:
            await service.close()

    asyncio.run(run())


def test_forming_a_lease_leaves_the_blocks_others_hold_as_they_are() -> None:
    """The kind's side of the invariant: the robots of held blocks are never drawn into the new one."""
    task = create_task("routing", ROUTING)
    state = task.initial_state()
    held = frozenset({1, 2})
    for attempt in range(5):
        formed = task.form_lease(state, 0, held, attempt)
        assert formed is not None
        for b in held:
            assert formed.blocks[b] == state.blocks[b]
        assert sorted(r for b in formed.blocks for r in b) == list(range(ROUTING["robots"]))
        assert task.objective(formed) == task.objective(state)
    assert task.form_lease(state, 0, frozenset({1, 2, 3}), 0) is None  # nowhere to put the rest
    one = create_task("routing", {**ROUTING, "blocks": 1})
    assert one.form_lease(one.initial_state(), 0, frozenset(), 0) is None  # one agent sees every robot
    fixed = create_task("routing", {**ROUTING, "neighbourhood_leases": False})
    assert fixed.form_lease(fixed.initial_state(), 0, held, 0) is None
    assert not capabilities.forms_leases(
        QuadraticTask(QuadraticTask.Params())
    )  # the kind has no such capability


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    overlap=st.booleans(),
    block=st.integers(0, 3),
    held=st.frozensets(st.integers(0, 3), max_size=2),
    attempt=st.integers(0, 1000),
    moved=st.booleans(),
)
def test_the_blocks_a_lease_changed_are_those_whose_values_differ(
    overlap: bool, block: int, held: frozenset[int], attempt: int, moved: bool
) -> None:
    """Routing's ``changed_blocks`` (it reads block lists, not values) names exactly the blocks whose values
    the default comparison finds changed: each gets the new version, so a lease on one answers stale. With
    ``moved``, a path changed too (the plan is another one) and the values are compared."""
    task = create_task("routing", {**ROUTING, "lease_overlap": overlap})
    before = task.initial_state()
    after = task.form_lease(before, block, held - {block}, attempt)
    if after is None:
        return
    if moved:
        paths = list(after.paths)
        paths[after.blocks[3][0]] = (*paths[after.blocks[3][0]], paths[after.blocks[3][0]][-1])
        after = replace(after, paths=tuple(paths))
    by_values = [b for b in range(task.n_blocks) if task.block_value(after, b) != task.block_value(before, b)]
    assert task.changed_blocks(before, after) == by_values
    assert capabilities.changed_blocks(task, before, after, task.n_blocks) == by_values
    assert block in by_values


def test_an_answer_for_a_block_whose_robots_changed_is_refused_with_its_shape() -> None:
    """``validate`` no longer knows a block's size: the head's block does, and says so."""
    task = create_task("routing", ROUTING)
    state = task.initial_state()
    formed = task.form_lease(state, 0, frozenset({1, 2}), 0)
    assert formed is not None and formed.blocks[0] != state.blocks[0]
    stale_value = task.block_value(state, 0)  # the block's robots before it was formed anew
    from tasks.base import InvalidProposal

    with pytest.raises(InvalidProposal) as info:
        task.evaluate_change(formed, {0: stale_value})
    assert info.value.code in ("bad_shape", "wrong_robot")


QUAD = {"blocks": 8, "dim": 3, "coupling": 0.6, "seed": 3}
"""Strong coupling: every block's change moves every other block's best value."""


def _improving_on_base_only(task: QuadraticTask, base: Snapshot, head: Snapshot, block: int) -> list[float]:
    rng = np.random.default_rng(0)
    old = np.asarray(task.block_value(base.state, block), float)
    for _ in range(1000):
        value = list(old + rng.normal(size=old.shape) * 0.1)
        if (
            base.objective - task.evaluate_change(base.state, {block: value})
            > 0
            > (head.objective - task.evaluate_change(head.state, {block: value}))
        ):
            return [float(v) for v in value]
    raise AssertionError("no such value")


def test_over_the_service_a_stale_answer_that_still_improves_merges_and_a_real_conflict_is_refused() -> None:
    async def run() -> None:
        service = CoordinatorService(ServiceSettings(), MemoryStore(), ServiceMetrics(CollectorRegistry()))
        spec, join, _ = await service.create(CreateTask(kind="quadratic", params=QUAD, mode="async"))
        agents = []
        for i in range(6):
            joined = await service.join(spec.id, join, JoinRequest(name=f"a{i}"))
            agents.append(await service.authenticate(spec.id, f"Bearer {joined.token}"))
        try:
            grants = [await service.lease(spec.id, a) for a in agents]  # all on version 0
            assert {g.version for g in grants} == {0} and grants[5].block == 5
            task = service.cache.memory(spec.id).built.task
            base = service.cache.memory(spec.id).built.snapshot
            proposer = task.make_proposer(task.ProposerParams())

            def body(g: LeaseGrant, value: Any) -> ProposalIn:
                return ProposalIn(
                    lease_id=g.lease_id, block=g.block, base_version=g.version, value=value,
                    predicted_improvement=1.0,
                )  # fmt: skip

            drafts = [proposer.propose(g.contract) for g in grants[:2]]
            assert drafts[0] is not None and drafts[1] is not None
            first, _ = await service.submit(spec.id, agents[0], body(grants[0], drafts[0].value), wait=5)
            assert first.verdict is not None and first.verdict.code == "merged"
            head = service.cache.memory(spec.id).built.snapshot
            late, _ = await service.submit(spec.id, agents[1], body(grants[1], drafts[1].value), wait=5)
            assert late.verdict is not None and late.verdict.code == "merged" and late.verdict.rebased
            conflict = _improving_on_base_only(task, base, head, grants[5].block)
            refused, _ = await service.submit(spec.id, agents[5], body(grants[5], conflict), wait=5)
            assert refused.verdict is not None and refused.verdict.code == "stale_footprint"
            report = await service.report(spec.id)
            assert report.proposals["rebased"] == 1
            assert report.proposals["rejected_by_reason"] == {"stale_footprint": 1}
        finally:
            await service.close()

    asyncio.run(run())


def test_a_dumped_state_reuses_unchanged_paths_and_matches_the_plan_after_merges() -> None:
    """``dump_state`` keeps the last dump's lists for the paths a merge left alone: the dump is still the
    plan, path for path, and a regrouped state (same paths) dumps its new blocks."""
    task = create_task("routing", {**ROUTING, "initial": "shortest"})
    state = task.initial_state()
    first = task.dump_state(state)
    proposer = task.make_proposer(task.ProposerParams(time_budget=0.3), seed=1)
    for step in range(3):
        snap = Snapshot(step, task.objective(state), (0,) * task.n_blocks, state)
        draft = proposer.propose(contract_envelope(task, snap, step % task.n_blocks))
        if draft is not None:
            state = task.apply(state, {draft.block: task.validate(draft.block, draft.value)})
        dumped = task.dump_state(state)
        assert dumped["cells"] == [list(p) for p in state.paths]
    assert dumped["cells"] != first["cells"]  # something merged
    formed = task.form_lease(state, 0, frozenset({1}), 0)
    assert formed is not None
    again = task.dump_state(formed)
    assert again["cells"] == dumped["cells"] and again["blocks"] == [list(b) for b in formed.blocks]
