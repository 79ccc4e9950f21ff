"""The contract suite can fail: two small kinds pass it, and each seeded bug makes the matching check fail."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, Field

from blockopt.testing import Kit, TaskContract
from tasks import Draft, InvalidProposal, NoKnobs, Proposer, Reference, Task
from tasks.capabilities import EVERYTHING

_REFERENCE_CALLS = itertools.count()
CODES = frozenset({"not_an_integer", "unknown_slot"})
"""Both kinds' codes: the suite reads the codes raised anywhere in this module."""


class ChainParams(BaseModel):
    blocks: int = Field(6, ge=2)


class Chain(Task[list[int], ChainParams]):
    """F = Σ (x_b − 3b)² + Σ x_b·x_{b+1}: neighbours interact, blocks two apart do not."""

    kind = "chain"
    Params = ChainParams
    rejection_codes = CODES
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
        if abs(value) > 10**6 and "huge_integers" not in self.bugs:  # F would overflow a float
            raise InvalidProposal("a block value is at most 10**6 in size", "bad_value")
        return value

    def reference(self) -> Reference:
        if "varying_reference" in self.bugs:  # e.g. CP-SAT with the machine's core count, within a time limit
            return Reference(-1e9 + next(_REFERENCE_CALLS), "lower_bound", method="CP-SAT", workers=0)
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
        ("varying_reference", "test_reference_is_reproducible"),
        ("huge_integers", "test_out_of_range_numbers_are_refused_never_a_crash"),
    ],
)
def test_each_seeded_bug_fails_its_check(bug: str, check: str) -> None:
    with pytest.raises((AssertionError, TypeError, ValueError, OverflowError)):
        getattr(TaskContract(), check)(kit_with(bug))


class SlotsParams(BaseModel):
    blocks: int = Field(3, ge=2)


@dataclass(frozen=True)
class SlotsState:
    x: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]
    """groups[b]: the slots block b holds (two each)."""


class Slots(Task[SlotsState, SlotsParams]):
    """F = Σ (x_s − s)²; a value names its slots ({"slot": x}), like job-shop's jobs or sqlplan's queries."""

    kind = "slots"
    Params = SlotsParams
    rejection_codes = CODES
    bugs: ClassVar[frozenset[str]] = frozenset()

    @property
    def n_blocks(self) -> int:
        return self.params.blocks

    def initial_state(self) -> SlotsState:
        n = 2 * self.n_blocks
        return SlotsState((0,) * n, tuple((b, b + self.n_blocks) for b in range(self.n_blocks)))

    def objective(self, state: SlotsState) -> float:
        return float(sum((x - s) ** 2 for s, x in enumerate(state.x)))

    def apply(self, state: SlotsState, changes: Mapping[int, Any]) -> SlotsState:
        x = list(state.x)
        for value in changes.values():
            for s, v in value.items():
                x[s] = v
        return SlotsState(tuple(x), state.groups)

    def block_value(self, state: SlotsState, block: int) -> dict[int, int]:
        return {s: state.x[s] for s in state.groups[block]}

    def dump_state(self, state: SlotsState) -> Any:
        return {"x": list(state.x), "groups": [list(g) for g in state.groups]}

    def load_state(self, data: Any) -> SlotsState:
        return SlotsState(tuple(data["x"]), tuple(tuple(g) for g in data["groups"]))

    def encode_value(self, value: dict[int, int]) -> dict[str, int]:
        return {str(s): v for s, v in sorted(value.items())}

    def footprint(self, state: SlotsState, block: int, value: Any) -> frozenset[Hashable]:
        return frozenset(value)

    def block_elements(self, state: SlotsState, block: int) -> frozenset[Hashable]:
        if "foreign_write" in self.bugs:  # the hole: the defaults, as if the value could name nothing
            return frozenset({("block", block)})
        return frozenset(("slot", s) for s in state.groups[block])

    def written_elements(self, state: SlotsState, block: int, value: Any) -> frozenset[Hashable]:
        if "foreign_write" in self.bugs:
            return self.block_elements(state, block)
        return frozenset(("slot", s) for s in value)

    def regroup(self, state: SlotsState, attempt: int, keep: frozenset[int] = frozenset()) -> SlotsState:
        """Each block's second slot moves to the next block (sizes kept)."""
        n = self.n_blocks
        return SlotsState(
            state.x, tuple((g[0], state.groups[(b + 1) % n][1]) for b, g in enumerate(state.groups))
        )

    def contract(self, state: SlotsState, block: int) -> dict[str, Any]:
        return {"block": block, "x": self.encode_value(self.block_value(state, block))}

    def validate(self, block: int, value: Any) -> dict[int, int]:
        """Stateless: it can check only that the value names two existing slots (blocks can be re-formed)."""
        if not 0 <= block < self.n_blocks:
            raise InvalidProposal(f"block {block} does not exist", "wrong_block")
        slots = {str(s) for s in range(2 * self.n_blocks)}
        if not isinstance(value, dict) or len(value) != 2 or not set(value) <= slots:
            raise InvalidProposal("a block value names two slots: {slot: integer}", "unknown_slot")
        if not all(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) <= 10**6 for v in value.values()
        ):
            raise InvalidProposal("slot values are integers of at most 10**6", "bad_value")
        return {int(s): v for s, v in value.items()}

    def reference(self) -> Reference:
        return Reference(0.0, "optimum")

    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> Proposer:
        return SlotTargets()


class SlotTargets(Proposer):
    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        d = contract["data"]
        x = {int(s): v for s, v in d["x"].items()}
        gain = sum((v - s) ** 2 for s, v in x.items())
        return Draft(d["block"], {str(s): s for s in x}, float(gain)) if gain > 0 else None


def slots_with(*bugs: str) -> Kit:
    class BuggySlots(Slots):
        pass

    BuggySlots.bugs = frozenset(bugs)
    return Kit.build(BuggySlots(SlotsParams()), NoKnobs())


class TestTheHealthySlotsPass(TaskContract):
    @pytest.fixture(scope="class")
    @classmethod
    def kit(cls) -> Kit:
        return slots_with()


def test_a_kind_that_lets_a_foreign_write_through_fails_the_ownership_check() -> None:
    """Slots with the defaults (its values "write only their own block"): block 1's draft, sent as block 0's
    value, validates and rewrites block 1's slots. The suite says so."""
    kit = slots_with("foreign_write")
    with pytest.raises(AssertionError, match="changed block"):
        TaskContract().test_a_foreign_write_is_reported_or_refused(kit)
    state, drafts = kit.cases()[0]
    foreign = next(d for d in drafts if d.block == 1)
    t = kit.task
    after = t.apply(state, {0: t.validate(0, foreign.value)})  # (what the hole lets through)
    assert t.block_value(after, 1) != t.block_value(state, 1)


def test_a_stateless_validate_is_not_enough_once_blocks_are_re_formed() -> None:
    """After a regrouping, block 0's own earlier draft names a slot block 0 no longer holds: the healthy kind
    reports it outside block 0's elements (read from the state), so the coordinator refuses it."""
    kit = slots_with()
    t = kit.task
    state, drafts = kit.cases()[0]
    regrouped = t.regroup(state, 1)
    own = next(d for d in drafts if d.block == 0)
    value = t.validate(0, own.value)
    assert not t.written_elements(state, 0, value) - t.block_elements(state, 0)
    assert t.written_elements(regrouped, 0, value) - t.block_elements(regrouped, 0) == {("slot", t.n_blocks)}


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
        def footprint(self, state: Any, block: int, value: Any) -> frozenset[Hashable]:
            return EVERYTHING

    TaskContract().test_disjoint_footprints_mean_zero_interaction(
        Kit.build(Everywhere(ChainParams(blocks=3)), NoKnobs())
    )
