"""The Task protocol every problem kind implements (DESIGN §4).

A task owns the model: the coordinator only ever sees block values through
these methods, so a new kind is one new module in ``tasks/`` and nothing else.
States are immutable from the engine's point of view: ``apply`` returns a new
state and the old one must stay valid (the engine keeps it for rollback and for
stale-correction bookkeeping).
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel

State = TypeVar("State")
Value = Any
"""A decoded, validated block value (kind-specific)."""
JSON = Any
"""Anything ``json.dumps`` accepts."""

ReferenceKind = Literal["optimum", "lower_bound"]


class InvalidProposal(ValueError):
    """A proposal that fails the task's structural checks.

    ``code`` is machine-readable (``wrong_block``, ``bad_shape``, ``illegal_move``,
    ``unknown_table``, ``over_budget``, ...); the message says why in words.
    """

    def __init__(self, reason: str, code: str = "invalid_proposal") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


@dataclass(frozen=True)
class Reference:
    """The value the gap is measured against, labelled by what it is."""

    value: float
    kind: ReferenceKind


@dataclass(frozen=True)
class Draft:
    """What a proposer hands back: a block value and its surrogate's decrease."""

    block: int
    value: JSON
    predicted_improvement: float
    info: dict[str, Any] = field(default_factory=dict)


class Proposer(abc.ABC):
    """A heuristic that improves one block from its contract alone.

    Proposers live beside their kind so an agent and the coordinator agree on
    the model; they never see the whole state, only the contract.
    """

    @property
    def lag_rounds(self) -> int:
        """Rounds this proposer may find nothing while still converging (e.g. stale views catching up)."""
        return 0

    @abc.abstractmethod
    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        """Return a draft for ``contract["block"]``, or None when no improvement is found."""


class Task(abc.ABC, Generic[State]):
    """One problem instance: its model, block partition and reference.

    Subclasses set ``kind`` and ``Params`` (the instance parameters, a pydantic
    model, so the CLI and the HTTP API validate them the same way) and
    ``ProposerParams`` (knobs of the kind's heuristic proposer).
    """

    kind: ClassVar[str]
    Params: ClassVar[type[BaseModel]]
    ProposerParams: ClassVar[type[BaseModel]]

    def __init__(self, params: BaseModel) -> None:
        self.params = params

    # -- instance -------------------------------------------------------
    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Human-readable instance name (shown in reports)."""

    @property
    @abc.abstractmethod
    def n_blocks(self) -> int:
        """Blocks are numbered 0..n_blocks-1."""

    def blocks(self) -> list[int]:
        return list(range(self.n_blocks))

    @abc.abstractmethod
    def initial_state(self) -> State: ...

    # -- model -----------------------------------------------------------
    @abc.abstractmethod
    def objective(self, state: State) -> float:
        """The global objective F (lower is better), computed from scratch."""

    @abc.abstractmethod
    def apply(self, state: State, changes: Mapping[int, Value]) -> State:
        """A new state with the given blocks replaced; ``state`` stays valid."""

    def evaluate_change(self, state: State, changes: Mapping[int, Value]) -> float:
        """F after applying ``changes``; kinds override this to be incremental."""
        return self.objective(self.apply(state, changes))

    @abc.abstractmethod
    def block_value(self, state: State, block: int) -> Value: ...

    @abc.abstractmethod
    def footprint(self, state: State, block: int, value: Value) -> frozenset[Hashable]:
        """What a change touches; disjoint footprints imply zero interaction."""

    def interaction(
        self, state: State, p: tuple[int, Value], q: tuple[int, Value], f0: float | None = None
    ) -> float:
        """c_pq = Δ_p + Δ_q − Δ_pq (zero means the two changes do not interfere)."""
        base = self.objective(state) if f0 is None else f0
        d_p = base - self.evaluate_change(state, {p[0]: p[1]})
        d_q = base - self.evaluate_change(state, {q[0]: q[1]})
        d_pq = base - self.evaluate_change(state, {p[0]: p[1], q[0]: q[1]})
        return d_p + d_q - d_pq

    def interactions(
        self, state: State, items: Sequence[tuple[int, Value]], pairs: Sequence[tuple[int, int]],
        f0: float | None = None,
    ) -> list[float]:
        """``interaction`` for each ``(a, b)`` index pair into ``items``; a round asks for all its pairs at
        once so a kind with a closed form can batch them (one matrix product instead of O(n²) calls)."""
        return [self.interaction(state, items[a], items[b], f0) for a, b in pairs]

    def regroup(self, state: State, attempt: int) -> State | None:
        """The same solution with its variables grouped into blocks differently, or None to keep the grouping.

        The coordinator asks after a round that merged nothing: a block's agent can
        only move its own variables, so an improvement that needs two blocks to move
        together is out of every agent's reach until they share a block. ``attempt``
        varies the answer between calls on the same state. The objective must not
        change, and every block keeps its size, so a stateless ``validate`` still holds.
        """
        return None

    @abc.abstractmethod
    def contract(self, state: State, block: int) -> dict[str, Any]:
        """What an agent needs for this block's decision (JSON-able), including correction data."""

    @abc.abstractmethod
    def validate(self, block: int, value: JSON) -> Value:
        """Decode and check a proposed block value; raise InvalidProposal with a reason."""

    @abc.abstractmethod
    def encode_value(self, value: Value) -> JSON:
        """The wire form of a block value (inverse of ``validate`` for valid values)."""

    @abc.abstractmethod
    def reference(self) -> Reference: ...

    @abc.abstractmethod
    def feasible(self, state: State) -> bool: ...

    # -- persistence (stores keep states as JSON) -------------------------
    @abc.abstractmethod
    def dump_state(self, state: State) -> JSON: ...

    @abc.abstractmethod
    def load_state(self, data: JSON) -> State: ...

    def pictures(self, state: State, stem: str) -> list[str]:
        """Draw the solution as files named ``stem`` + suffix; kinds with something to show override."""
        return []

    def solution(self, state: State) -> JSON:
        """The current solution as users want to read it (defaults to the dumped state)."""
        return self.dump_state(state)

    # -- the web UI's kind panel (coordinator/ui) ----------------------------
    def view_model(self, state: State) -> JSON | None:
        """What the kind's own panel in the web UI draws, as JSON; None (the default) shows no panel."""
        return None

    @classmethod
    def view_renderer(cls) -> Path | None:
        """The kind's browser module (ES module exporting ``render(element, model)``) shipped beside it, or None."""
        return None

    # -- agents side ------------------------------------------------------
    @abc.abstractmethod
    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> Proposer:
        """The kind's heuristic proposer, configured by ``ProposerParams``."""

    def scale(self) -> float:
        """A magnitude for tolerances (|F| at the start by default)."""
        return max(1.0, abs(self.objective(self.initial_state())))
