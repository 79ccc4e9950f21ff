"""The Task protocol by capability (tasks/capabilities.py): a minimal kind writes the core only and gets
sound defaults; a capability a kind offers is detected and used; half of one is refused at registration."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from tasks import Draft, Proposer, Reference, Task, capabilities
from tasks.capabilities import EVERYTHING, IncrementalScoring, Ownership, Persistence
from tasks.registry import KindRefused, check_kind


class Sizes(BaseModel):
    blocks: int = 3


class Nothing(Proposer):
    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        return None


class Minimal(Task[tuple[float, ...], Sizes]):
    """The core and nothing else: F = Σ x², one coordinate per block."""

    kind = "minimal"
    Params = Sizes

    def __init__(self, params: Sizes) -> None:
        super().__init__(params)
        self.full_scorings = 0

    @property
    def n_blocks(self) -> int:
        return self.params.blocks

    def initial_state(self) -> tuple[float, ...]:
        return (1.0,) * self.n_blocks

    def objective(self, state: tuple[float, ...]) -> float:
        self.full_scorings += 1
        return sum(x * x for x in state)

    def apply(self, state: tuple[float, ...], changes: Mapping[int, float]) -> tuple[float, ...]:
        return tuple(changes.get(i, x) for i, x in enumerate(state))

    def block_value(self, state: tuple[float, ...], block: int) -> float:
        return state[block]

    def contract(self, state: tuple[float, ...], block: int) -> dict[str, Any]:
        return {"x": state[block]}

    def validate(self, block: int, value: Any) -> float:
        return float(value)

    def reference(self) -> Reference:
        return Reference(0.0, "optimum")

    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> Proposer:
        return Nothing()


class Incremental(Minimal):
    kind = "incremental"

    def evaluate_change(self, state: tuple[float, ...], changes: Mapping[int, float]) -> float:
        return sum(changes.get(i, x) ** 2 for i, x in enumerate(state))


class HalfOwned(Minimal):
    kind = "halfowned"

    def block_elements(self, state: Any, block: int) -> frozenset[Hashable]:  # written_elements forgotten
        return frozenset({("x", block)})


def test_a_minimal_kind_offers_nothing_and_gets_the_sound_defaults() -> None:
    task = Minimal(Sizes())
    state = task.initial_state()
    assert capabilities.capabilities_of(Minimal) == frozenset()
    before = task.full_scorings
    assert capabilities.evaluate_change(task, state, {0: 0.0}) == 2.0
    assert task.full_scorings == before + 1  # scored from scratch: objective(apply(...))
    assert capabilities.footprint(task, state, 0, 0.0) == EVERYTHING
    assert capabilities.interaction(task, state, (0, 0.0), (1, 0.0)) == pytest.approx(0.0)
    assert capabilities.neighbourhoods(task) == ("partition",)
    assert capabilities.regroup(task, state, 1) is None and capabilities.rebase(task, state, 0, 0.0) is None
    assert capabilities.block_elements(task, state, 2) == {("block", 2)}
    assert capabilities.written_elements(task, state, 2, 0.0) == {("block", 2)}
    assert capabilities.dump_state(task, state) is state and capabilities.load_state(task, [1.0]) == [1.0]
    assert capabilities.view_renderer(Minimal) is None and capabilities.pictures(task, state, "x") == []
    assert capabilities.a_priori(task) is None and not capabilities.forms_leases(task)
    assert check_kind("minimal", Minimal) is Minimal


def test_an_offered_capability_is_detected_and_used() -> None:
    task = Incremental(Sizes())
    assert capabilities.offers(task, IncrementalScoring) and not capabilities.offers(task, Ownership)
    before = task.full_scorings
    assert capabilities.evaluate_change(task, task.initial_state(), {0: 0.0}) == 2.0
    assert task.full_scorings == before  # the kind's own incremental scoring, not objective(apply(...))


def test_half_a_capability_is_refused_at_registration_naming_what_is_missing() -> None:
    assert capabilities.half_offered(HalfOwned) == ["Ownership needs written_elements beside block_elements"]
    with pytest.raises(KindRefused, match="Ownership needs written_elements beside block_elements"):
        check_kind("halfowned", HalfOwned)


def test_the_built_in_kinds_offer_their_persistence_and_ownership() -> None:
    """Every built-in kind names its elements and stores its state as JSON of its own: were one of their
    members renamed, the kind would fall back to the defaults (a routing plan stored as a Python object)."""
    from tasks.registry import kind_class

    for kind in ("quadratic", "routing", "sqlplan", "jobshop"):
        offered = capabilities.capabilities_of(kind_class(kind))
        assert {Ownership, Persistence} <= offered, kind
