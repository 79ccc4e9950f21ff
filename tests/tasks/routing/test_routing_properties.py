"""Routing properties on random plans: the validator, the incremental scorer and the full scorer agree.

The validator shares no code with the scorer, so agreement on arbitrary plans
(with conflicts of every kind: vertex, edge, passing a parked robot) is
evidence that both count the same thing.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.engine.records import Proposal
from coordinator.engine.rounds import EngineSettings, RoundEngine
from tasks.registry import InvalidParams
from tasks.routing import RoutingTask
from tasks.routing.instance import RoutingParams
from tasks.routing.occupancy import Path, canonical
from tasks.routing.task import RoutingState
from tasks.routing.validator import validate_plan

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make(width: int, height: int, density: float, robots: int, blocks: int, seed: int) -> RoutingTask | None:
    params = RoutingParams(
        map="generated",
        width=width,
        height=height,
        density=density,
        robots=robots,
        blocks=min(blocks, robots),
        seed=seed,
        exact_limit=0,
        partition="round_robin",
        # a small random instance can have no collision-free plan: the first plan's repair would then
        # run its whole default 30 s for every example that draws one
        initial_repair=0.5,
    )
    try:
        return RoutingTask(params)
    except InvalidParams:  # too few connected cells for that many robots
        return None


instances = st.builds(
    make,
    width=st.integers(3, 7),
    height=st.integers(3, 7),
    density=st.sampled_from([0.0, 0.1, 0.2]),
    robots=st.integers(2, 6),
    blocks=st.integers(1, 3),
    seed=st.integers(0, 10_000),
).filter(lambda t: t is not None)


def random_path(task: RoutingTask, robot: int, rng: random.Random, wander: int = 6) -> Path:
    """A random walk (with waits) from the start, then a shortest path to the goal."""
    g = task.grid
    c = task.inst.starts[robot]
    path = [c]
    for _ in range(rng.randint(0, wander)):
        c = rng.choice(g.moves(c))
        path.append(c)
    path += g.shortest_path(c, task.inst.goals[robot])[1:]
    return canonical(path)


def random_value(
    task: RoutingTask, block: int, rng: random.Random, state: RoutingState | None = None
) -> tuple[Path, ...]:
    blocks = task.inst.blocks if state is None else state.blocks
    return tuple(random_path(task, r, rng) for r in blocks[block])


def reshuffled(task: RoutingTask, state: RoutingState, rng: random.Random) -> RoutingState:
    """The same plan with its robots dealt into blocks of the same sizes at random (as a regrouping may)."""
    robots = list(range(task.inst.n_robots))
    rng.shuffle(robots)
    blocks, at = [], 0
    for b in state.blocks:
        blocks.append(tuple(robots[at : at + len(b)]))
        at += len(b)
    return replace(state, blocks=tuple(blocks))


def xy_plan(task: RoutingTask, paths: tuple[Path, ...]) -> list[list[tuple[int, int]]]:
    return [[task.grid.xy(c) for c in p] for p in paths]


def check_against_validator(task: RoutingTask, paths: tuple[Path, ...]) -> None:
    state = task.state_of(paths)
    g = task.grid
    verdict = validate_plan(
        g.rows(),
        [g.xy(s) for s in task.inst.starts],
        [g.xy(t) for t in task.inst.goals],
        xy_plan(task, paths),
    )
    assert not verdict.errors
    assert verdict.soc == state.soc
    assert verdict.conflicts == state.conflicts
    assert verdict.valid == task.feasible(state)


@FAST
@given(task=instances, seed=st.integers(0, 10**6))
def test_validator_and_scorer_agree_on_random_plans(task: RoutingTask, seed: int) -> None:
    rng = random.Random(seed)
    paths = tuple(random_path(task, r, rng) for r in range(task.inst.n_robots))
    check_against_validator(task, paths)


@FAST
@given(task=instances, seed=st.integers(0, 10**6), steps=st.integers(1, 6))
def test_incremental_and_full_scoring_agree_after_commits(task: RoutingTask, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    state = task.initial_state()
    history = [state]
    for _ in range(steps):
        if rng.random() < 0.3:  # blocks regrouped between commits: scoring follows the new membership
            state = reshuffled(task, state, rng)
        chosen = rng.sample(task.blocks(), rng.randint(1, task.n_blocks))
        changes = {b: random_value(task, b, rng, state) for b in chosen}
        predicted = task.evaluate_change(state, changes)
        state = task.apply(state, changes)
        assert predicted == task.objective(state) == task.full_objective(state.paths)
        history.append(state)
    for old in history:  # apply is copy-on-write: every earlier state is still intact
        assert task.objective(old) == task.full_objective(old.paths)
        assert task.objective(old) == task.objective(task.state_of(old.paths))
    check_against_validator(task, state.paths)


@FAST
@given(task=instances, seed=st.integers(0, 10**6))
def test_interaction_is_exact_and_footprints_are_safe(task: RoutingTask, seed: int) -> None:
    if task.n_blocks < 2:
        return
    rng = random.Random(seed)
    state = task.apply(task.initial_state(), {b: random_value(task, b, rng) for b in task.blocks()})
    b1, b2 = rng.sample(task.blocks(), 2)
    v1, v2 = random_value(task, b1, rng), random_value(task, b2, rng)
    f0 = task.full_objective(state.paths)

    def full(changes: dict[int, tuple[Path, ...]]) -> float:
        return task.full_objective(task.apply(state, changes).paths)

    expected = (f0 - full({b1: v1})) + (f0 - full({b2: v2})) - (f0 - full({b1: v1, b2: v2}))
    assert task.interaction(state, (b1, v1), (b2, v2), f0) == expected
    if not task.footprint(state, b1, v1) & task.footprint(state, b2, v2):
        assert expected == 0


@FAST
@given(task=instances, seed=st.integers(0, 10**6), policy=st.sampled_from(["independent", "checked"]))
def test_a_commit_never_makes_the_objective_worse(task: RoutingTask, seed: int, policy: str) -> None:
    rng = random.Random(seed)
    engine = RoundEngine(task, EngineSettings(merge_policy=policy))  # type: ignore[arg-type]
    snap = engine.initial_snapshot()
    for round_index in range(4):
        proposals = [
            Proposal(
                id=uuid.uuid4().hex,
                agent=f"a{i}",
                block=b,
                base_version=snap.version,
                predicted_improvement=1.0,
                value=task.encode_value(random_value(task, b, rng, snap.state)),
            )
            for i, b in enumerate(rng.choices(task.blocks(), k=rng.randint(0, 4)))
        ]
        outcome = engine.run_round(snap, proposals, round_index, regroup=True)
        new = outcome.snapshot
        assert new.objective <= snap.objective
        assert new.objective == task.full_objective(new.state.paths)
        if (
            outcome.record.regrouped
        ):  # same plan, new grouping of the same sizes, every block at the new version
            assert outcome.record.accepted == 0 and new.state.paths == snap.state.paths
            assert sorted(map(len, new.state.blocks)) == sorted(map(len, snap.state.blocks))
            assert sorted(r for b in new.state.blocks for r in b) == list(range(task.inst.n_robots))
            assert set(new.block_versions) == {snap.version + 1} == {new.version}
        snap = new


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task=instances, seed=st.integers(0, 10**6))
def test_prediction_is_exact_when_the_contract_sees_everything(task: RoutingTask, seed: int) -> None:
    """With a margin covering the map, the surrogate's decrease is the true improvement (δ = 0)."""
    task.p = task.p.model_copy(update={"margin": 64})
    rng = random.Random(seed)
    state = task.apply(task.initial_state(), {b: random_value(task, b, rng) for b in task.blocks()})
    block = rng.choice(task.blocks())
    proposer = task.make_proposer(task.ProposerParams(time_budget=0.05), seed=seed)
    draft = proposer.propose(
        {"block": block, "version": 0, "budget": {}, "data": task.contract(state, block)}
    )
    if draft is None:
        return
    value = task.validate(block, draft.value)
    actual = task.objective(state) - task.evaluate_change(state, {block: value})
    assert draft.predicted_improvement == actual
    assert actual > 0


@FAST
@given(
    n=st.integers(2, 40),
    k=st.integers(2, 6),
    seed=st.integers(0, 10**6),
    pairs=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39), st.integers(1, 5)), max_size=120),
)
def test_regrouping_keeps_block_sizes_and_never_cuts_more(
    n: int, k: int, seed: int, pairs: list[tuple[int, int, int]]
) -> None:
    from tasks.routing.partition import by_interaction, shaken

    k = min(k, n)
    robots = list(range(n))
    random.Random(seed).shuffle(robots)
    start = shaken([robots[b::k] for b in range(k)], robots, 3, seed)
    weights: dict[tuple[int, int], float] = {}
    for i, j, w in pairs:
        if i < n and j < n and i != j:
            key = (min(i, j), max(i, j))
            weights[key] = weights.get(key, 0.0) + w

    def cut(groups: list[list[int]]) -> float:
        where = {r: b for b, g in enumerate(groups) for r in g}
        return sum(w for (i, j), w in weights.items() if where[i] != where[j])

    out = by_interaction(weights, start)
    assert [len(g) for g in out] == [len(g) for g in start]
    assert sorted(r for g in out for r in g) == list(range(n))
    assert cut(out) <= cut(start)
