"""The quadratic kind: the model matches its closed forms, and the proposer solves its surrogate."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Snapshot
from tasks.base import InvalidProposal
from tasks.quadratic import QuadraticParams, QuadraticProposer, QuadraticTask
from tasks.registry import InvalidParams, create_task


def make(blocks: int = 4, dim: int = 3, coupling: float = 0.5, seed: int = 0) -> QuadraticTask:
    return QuadraticTask(QuadraticParams(blocks=blocks, dim=dim, coupling=coupling, seed=seed))


instances = st.builds(
    make,
    blocks=st.integers(2, 6),
    dim=st.integers(1, 4),
    coupling=st.floats(0.0, 1.0),
    seed=st.integers(0, 10_000),
)


def random_state(task: QuadraticTask, seed: int):
    rng = np.random.default_rng(seed)
    return task.apply(task.initial_state(), {i: rng.standard_normal(task.d) for i in task.blocks()})


def random_moves(task: QuadraticTask, seed: int, count: int) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed + 1)
    chosen = rng.choice(task.n_blocks, size=min(count, task.n_blocks), replace=False)
    return {int(i): rng.standard_normal(task.d) for i in chosen}


def test_matrix_is_symmetric_positive_definite() -> None:
    for coupling in (0.0, 0.3, 1.0):
        a = make(blocks=8, dim=4, coupling=coupling).a
        assert np.allclose(a, a.T)
        assert np.linalg.eigvalsh(a).min() > 0


def test_optimum_is_the_minimum() -> None:
    task = make(blocks=5, dim=3)
    x_star = np.linalg.solve(task.a, task.b)
    state = task.apply(task.initial_state(), {i: x_star[i * 3 : (i + 1) * 3] for i in range(5)})
    assert task.objective(state) == pytest.approx(task.reference().value, rel=1e-12)
    assert task.reference().kind == "optimum"


@settings(max_examples=60, deadline=None)
@given(task=instances, seed=st.integers(0, 1000), count=st.integers(1, 6))
def test_incremental_evaluation_equals_full(task: QuadraticTask, seed: int, count: int) -> None:
    state = random_state(task, seed)
    moves = random_moves(task, seed, count)
    full = task.objective(task.apply(state, moves))
    assert task.evaluate_change(state, moves) == pytest.approx(full, rel=1e-10, abs=1e-10)


@settings(max_examples=60, deadline=None)
@given(task=instances, seed=st.integers(0, 1000))
def test_interaction_formula_equals_direct_definition(task: QuadraticTask, seed: int) -> None:
    state = random_state(task, seed)
    moves = list(random_moves(task, seed, 2).items())
    p, q = moves[0], moves[1]
    f0 = task.objective(state)
    direct = (
        (f0 - task.objective(task.apply(state, dict([p]))))
        + (f0 - task.objective(task.apply(state, dict([q]))))
        - (f0 - task.objective(task.apply(state, dict([p, q]))))
    )
    assert task.interaction(state, p, q) == pytest.approx(direct, rel=1e-8, abs=1e-9)


def test_separable_instance_has_no_interaction() -> None:
    task = make(coupling=0.0)
    state = random_state(task, 3)
    moves = list(random_moves(task, 3, 2).items())
    assert task.interaction(state, moves[0], moves[1]) == 0.0


def test_exact_proposer_predicts_the_true_improvement() -> None:
    task = make(blocks=6, dim=3, coupling=0.7)
    state = random_state(task, 5)
    snap = Snapshot(0, task.objective(state), (0,) * 6, state)
    draft = QuadraticProposer().propose(contract_envelope(task, snap, 2))
    assert draft is not None
    actual = snap.objective - task.evaluate_change(state, {2: np.asarray(draft.value)})
    assert draft.predicted_improvement == pytest.approx(actual, rel=1e-10)


def test_noisy_and_stale_proposers_mispredict() -> None:
    task = make(blocks=6, dim=3, coupling=0.7)
    state = random_state(task, 5)
    snap = Snapshot(3, task.objective(state), (0,) * 6, state)
    draft = QuadraticProposer(noise=0.1, seed=1).propose(contract_envelope(task, snap, 2))
    assert draft is not None
    actual = snap.objective - task.evaluate_change(state, {2: np.asarray(draft.value)})
    assert abs(draft.predicted_improvement - actual) > 1e-6

    stale = QuadraticProposer(staleness=1)
    old = Snapshot(2, snap.objective, snap.block_versions, task.initial_state())
    stale.propose(contract_envelope(task, old, 2))
    late = stale.propose(contract_envelope(task, snap, 2))
    fresh = QuadraticProposer().propose(contract_envelope(task, snap, 2))
    assert late is not None and fresh is not None
    assert not np.allclose(late.value, fresh.value)


def test_a_stale_proposer_lags_by_its_lease_clock_not_by_its_leases_of_the_block() -> None:
    """An agent that gets a block back after more than k leases of other blocks uses its current correction:
    its lag stays within the k rounds the stall rule waits, however the blocks rotate among agents."""
    task = make(blocks=6, dim=3, coupling=0.7)
    state = random_state(task, 5)
    snap = Snapshot(5, task.objective(state), (0,) * 6, state)
    old = Snapshot(2, snap.objective, snap.block_versions, task.initial_state())

    def after(others: int) -> list[float]:
        stale = QuadraticProposer(staleness=2)
        stale.propose(contract_envelope(task, old, 2))
        for _ in range(others):
            stale.propose(contract_envelope(task, old, 4))
        draft = stale.propose(contract_envelope(task, snap, 2))
        assert draft is not None
        return list(draft.value)

    fresh = QuadraticProposer().propose(contract_envelope(task, snap, 2))
    assert fresh is not None
    assert not np.allclose(after(1), fresh.value)  # 2 leases ago: within the window, still late
    assert np.allclose(after(2), fresh.value)  # 3 leases ago: caught up


@pytest.mark.parametrize(
    ("block", "value", "code"),
    [
        (9, [0.0, 0.0, 0.0], "wrong_block"),
        (1, [0.0, 0.0], "bad_shape"),
        (1, "abc", "bad_shape"),
        (1, [0.0, float("nan"), 0.0], "bad_value"),
    ],
)
def test_validate_rejects_bad_values(block: int, value: object, code: str) -> None:
    with pytest.raises(InvalidProposal) as err:
        make().validate(block, value)
    assert err.value.code == code


def test_state_round_trips_through_json() -> None:
    task = make()
    state = random_state(task, 1)
    again = task.load_state(task.dump_state(state))
    assert task.objective(again) == task.objective(state)


def test_bad_parameters_name_the_parameter() -> None:
    with pytest.raises(InvalidParams, match="coupling"):
        create_task("quadratic", {"coupling": 2})
    with pytest.raises(InvalidParams, match="unknown_knob"):
        create_task("quadratic", {"unknown_knob": 1})
