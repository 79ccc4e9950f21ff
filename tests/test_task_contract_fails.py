"""The contract suite can fail: a small kind passes it, and each seeded bug makes the matching check fail."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, Field

from blockopt.testing import Kit, TaskContract
from tasks import Draft, InvalidProposal, NoKnobs, Proposer, Reference, Task


class ChainParams(BaseModel):
    blocks: int = Field(6, ge=2)


class Chain(Task[list[int], ChainParams]):
    """F = Σ (x_b − 3b)² + Σ x_b·x_{b+1}: neighbours interact, blocks two apart do not."""

    kind = "chain"
    Params = ChainParams
    rejection_codes = frozenset({"not_an_integer"})
    bugs: ClassVar[frozenset[str]] = frozenset()

    @property
    def n_blocks(self) -> int:
        return self.params.blocks

    def initial_state(self) -> list[int]:
        return [0] * self.n_blocks

    def objective(self, state: list[int]) -> float:
        return float(
            sum((x - 3 * b) ** 2 for b, x in enumerate(state))
            + sum(a * b for a, b in zip(state, state[1:], strict=False))
        )

    def apply(self, state: list[int], changes: Mapping[int, Any]) -> list[int]:
        new = state if "mutating_apply" in self.bugs else list(state)
        for b, x in changes.items():
            new[b] = x
        return new

    def evaluate_change(self, state: list[int], changes: Mapping[int, Any]) -> float:
        off = 1.0 if "wrong_incremental" in self.bugs and len(changes) > 1 else 0.0
        return self.objective(self.apply(state, changes)) + off

    def block_value(self, state: list[int], block: int) -> int:
        return state[block]

    def footprint(self, state: list[int], block: int, value: Any) -> frozenset[Hashable]:
        if "unsound_footprint" in self.bugs:
            return frozenset({block})
        return frozenset({("edge", block - 1), ("edge", block)})

    def contract(self, state: list[int], block: int) -> dict[str, Any]:
        return {
            "block": block,
            "x": state[block],
            "left": state[block - 1] if block else 0,
            "right": state[block + 1] if block + 1 < len(state) else 0,
        }

    def validate(self, block: int, value: Any) -> int:
        if "crash_on_garbage" in self.bugs:
            return int(value)
        if not 0 <= block < self.n_blocks:
            raise InvalidProposal(f"block {block} does not exist", "wrong_block")
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidProposal("a block value is an integer", "not_an_integer")
        return value

    def reference(self) -> Reference:
        return Reference(-1e9, "lower_bound")

    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> Proposer:
        return CoordinateStep()


class CoordinateStep(Proposer):
    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        d = contract["data"]
        b = d["block"]
        best = round((6 * b - d["left"] - d["right"]) / 2)  # argmin of (x − 3b)² + x·(left + right)
        gain = ((d["x"] - 3 * b) ** 2 + d["x"] * (d["left"] + d["right"])) - (
            (best - 3 * b) ** 2 + best * (d["left"] + d["right"])
        )
        return Draft(b, best, float(gain)) if gain > 0 else None


def kit_with(*bugs: str) -> Kit:
    class BuggyChain(Chain):
        pass

    BuggyChain.bugs = frozenset(bugs)
    if "undeclared_code" in bugs:
        BuggyChain.rejection_codes = frozenset()
    return Kit.build(BuggyChain(ChainParams()), NoKnobs())


@pytest.fixture(scope="module")
def kit() -> Kit:
    return kit_with()


class TestTheHealthyChainPasses(TaskContract):
    pass


@pytest.mark.parametrize(
    ("bug", "check"),
    [
        ("unsound_footprint", "test_disjoint_footprints_mean_zero_interaction"),
        ("mutating_apply", "test_apply_never_mutates"),
        ("wrong_incremental", "test_incremental_scoring_equals_full_scoring"),
        ("crash_on_garbage", "test_garbage_is_refused_with_a_declared_reason"),
        ("undeclared_code", "test_garbage_is_refused_with_a_declared_reason"),
        ("undeclared_code", "test_rejection_codes_in_the_source_are_declared"),
    ],
)
def test_each_seeded_bug_fails_its_check(bug: str, check: str) -> None:
    with pytest.raises((AssertionError, TypeError, ValueError)):
        getattr(TaskContract(), check)(kit_with(bug))


def test_an_example_too_dense_for_the_footprint_check_fails_asking_for_a_sparser_one() -> None:
    """On three chain blocks only 1 and 2 find a move, and they are neighbours: every pair of drafts shares
    an edge, so nothing would be checked."""
    dense = Kit.build(Chain(ChainParams(blocks=3)), NoKnobs())
    assert [d.block for d in dense.drafts[0]] == [1, 2]
    with pytest.raises(AssertionError, match="give Chain.example a sparser instance"):
        TaskContract().test_disjoint_footprints_mean_zero_interaction(dense)


def test_a_kind_whose_footprints_are_everything_has_no_pair_to_check_and_passes() -> None:
    """The default footprint (``EVERYTHING``) is sound by construction: the engine measures every pair."""

    class Everywhere(Chain):
        footprint = Task.footprint

    TaskContract().test_disjoint_footprints_mean_zero_interaction(
        Kit.build(Everywhere(ChainParams(blocks=3)), NoKnobs())
    )
