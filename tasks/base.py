"""The Task protocol every problem kind implements (docs/architecture.md §3).

A task owns the model: the coordinator only ever sees block values through
these methods, so a new kind is one module or one installed package (entry point
group ``blockopt.tasks``) and nothing else. Nine members are required (marked
abstract); every other member has a safe default. States are immutable from the
engine's point of view: ``apply`` returns a new state and the old one must stay
valid (the engine keeps it for rollback and for stale-correction bookkeeping).

One job over 400 lines: the one protocol a kind implements, each member with the documentation its author
reads.
"""

from __future__ import annotations

import abc
import typing
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal

from pydantic import BaseModel
from typing_extensions import TypeVar

from tasks.prompt import KindPrompt

State = TypeVar("State")
P = TypeVar("P", bound=BaseModel, default=BaseModel)
"""The kind's instance-parameter model (``Task.Params``); ``Task[S]`` alone means any parameters."""
Value = Any
"""A decoded, validated block value (kind-specific)."""
JSON = Any
"""Anything ``json.dumps`` accepts."""

ReferenceKind = Literal["optimum", "lower_bound"]

OUTSIDE_LEASE = "outside_lease"
"""The code of a value that writes elements its block does not hold (``Task.written_elements``)."""

COMMON_REJECTION_CODES = frozenset(
    {"invalid_proposal", "wrong_block", "bad_shape", "bad_value", OUTSIDE_LEASE}
)
"""Codes any kind's ``validate`` may raise without declaring them."""

RUNNER_OPTIONS = frozenset(
    {
        "agents",
        "merge",
        "max_rounds",
        "time_limit",
        "report",
        "inproc",
        "window",
        "quiet",
        "mode",
        "processes",
        "round_deadline",
        "lease_ttl",
        "proposer",
        "proposer_option",
        "llm_base_url",
        "llm_model",
        "reasoning_effort",
        "preset",
        "store",
        "stop_gain_per_1k_tokens",
        "stop_gain_per_agent_second",
        "ui",
        "selection",
        "target",
        "plot_x",
    }
)
"""Options of ``blockopt run`` itself: a kind's parameter with one of these names is refused at registration
(``blockopt run KIND --NAME`` could not mean both)."""


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
    """The value the gap is measured against, labelled by what it is, and how it was obtained.

    The optional fields are its provenance, recorded in the run report so a reference can be reproduced: a
    solver's answer depends on its workers, seed and time limit (CP-SAT proved an optimum with 8 workers and
    gave only a bound with 4), so a kind fixes them and says so here."""

    value: float
    kind: ReferenceKind
    method: str | None = None
    """How it was obtained, in words (``"closed form"``, ``"sum of shortest paths"``, ``"CP-SAT"``)."""
    solver: str | None = None
    """The solver and its version, when one was run (``"ortools CP-SAT 9.12.4544"``)."""
    workers: int | None = None
    seed: int | None = None
    time_limit: float | None = None
    """Seconds the solver was given."""
    proven: bool | None = None
    """Whether the value is proven: an optimum proven optimal, or a bound proven valid."""

    def provenance(self) -> dict[str, Any]:
        """The fields above that are set (the run report's ``objective.reference_provenance``)."""
        fields = {
            "method": self.method,
            "solver": self.solver,
            "workers": self.workers,
            "seed": self.seed,
            "time_limit": self.time_limit,
            "proven": self.proven,
        }
        return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True)
class APriori:
    """A contraction stated from problem data alone: g_{t+1} <= (1 - factor[policy])·g_t for a round run under
    merge policy ``policy``, valid when every block proposed an exact minimizer of its local objective plus
    correction on the current version (proposers say so with ``Draft.info["exact_minimizer"]``)."""

    constants: dict[str, float]
    factor: dict[str, float]


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

    @abc.abstractmethod
    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        """Return a draft for ``contract["block"]``, or None when no improvement is found."""


EVERYTHING: frozenset[Hashable] = frozenset({"*"})
"""The default footprint: overlaps every other one."""


class NoKnobs(BaseModel):
    """``ProposerParams`` of a kind whose heuristic has no settings."""


class Task(abc.ABC, Generic[State, P]):
    """One problem instance: its model, block partition and reference.

    Subclasses set ``kind`` and ``Params`` (the instance parameters, a pydantic
    model, so the CLI and the HTTP API validate them the same way; ``P`` types
    ``self.params``) and may set ``ProposerParams`` (knobs of the kind's heuristic
    proposer). Every field of both models becomes a ``blockopt run KIND`` option
    under its own name; names of the runner's options (``RUNNER_OPTIONS``) and a
    name in both models are refused when the kind is registered.
    """

    kind: ClassVar[str]
    Params: ClassVar[type[BaseModel]]
    ProposerParams: ClassVar[type[BaseModel]] = NoKnobs
    rejection_codes: ClassVar[frozenset[str]] = frozenset()
    """Codes ``validate`` and ``evaluate_change`` raise besides ``COMMON_REJECTION_CODES`` (metrics label by them)."""
    prompt: ClassVar[type[KindPrompt]] = KindPrompt
    """How an LLM agent is told about this kind's contract and value (``tasks.prompt``)."""
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    """Named parameter sets (``blockopt run KIND --preset NAME``); explicit options override them."""
    example: ClassVar[Mapping[str, Any]] = {}
    """Fields of ``Params`` and ``ProposerParams`` for a small instance that runs in seconds (the task contract
    suite, ``blockopt/testing/tasks.py``, checks every installed kind on it); empty means the models' defaults."""

    def __init__(self, params: P) -> None:
        self.params: P = params

    @classmethod
    def team_defaults(cls, agents: int, mode: str = "rounds") -> dict[str, Any]:
        """Parameter defaults that depend on the team size ``blockopt run`` was given (e.g. one block per agent)
        and on its service path's ``mode`` (``rounds`` or ``async``)."""
        return {}

    def run_seed(self) -> int:
        """Seed of the run's proposers (``blockopt run``): kinds with a seed parameter return it."""
        return 0

    # -- instance -------------------------------------------------------
    @property
    def name(self) -> str:
        """Human-readable instance name (shown in reports)."""
        return self.kind

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

    def screen_change(self, state: State, changes: Mapping[int, Value]) -> float | None:
        """A cheap prediction of ``evaluate_change(state, changes)``, or None: the kind has no screen (default).

        For kinds whose exact objective is expensive (a query workload on a large database, a long
        simulation): a sampled or smaller copy, a calibrated cost model. When it returns a number, the
        round engine selects from predictions and runs ``evaluate_change`` only on the combination it is
        about to merge (and a bounded number of fallbacks, ``EngineSettings.screen_exact_checks``); the
        committed objective is always exact. Return None for every change or for none. It may raise
        ``InvalidProposal`` for a change it can prove invalid (e.g. a block the value may not touch).
        """
        return None

    @abc.abstractmethod
    def block_value(self, state: State, block: int) -> Value: ...

    def footprint(self, state: State, block: int, value: Value) -> frozenset[Hashable]:
        """What a change touches; disjoint footprints imply zero interaction.

        The default says every change touches everything, which is always sound: the engine then measures
        every pair's interaction instead of skipping disjoint ones.
        """
        return EVERYTHING

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
        self,
        state: State,
        items: Sequence[tuple[int, Value]],
        pairs: Sequence[tuple[int, int]],
        f0: float | None = None,
    ) -> list[float]:
        """``interaction`` for each ``(a, b)`` index pair into ``items``; a round asks for all its pairs at
        once so a kind with a closed form can batch them (one matrix product instead of O(n²) calls)."""
        return [self.interaction(state, items[a], items[b], f0) for a, b in pairs]

    def a_priori(self) -> APriori | None:
        """The kind's a priori bound, if its problem data give one (most kinds: None)."""
        return None

    def regroup(self, state: State, attempt: int, keep: frozenset[int] = frozenset()) -> State | None:
        """The same solution with its variables grouped into blocks differently, or None to keep the grouping.

        The coordinator asks after a round that merged nothing: a block's agent can
        only move its own variables, so an improvement that needs two blocks to move
        together is out of every agent's reach until they share a block. ``attempt``
        varies the answer between calls on the same state. The objective must not
        change, and every block keeps its size, so a stateless ``validate`` still holds.
        The blocks in ``keep`` are leased (an agent is working on them): they must stay as
        they are, and the others are regrouped among their own variables; a kind that
        cannot do that returns None when ``keep`` is not empty.
        """
        return None

    def rebase(self, state: State, block: int, value: Value) -> Value | None:
        """``value``, computed on an older version, adapted to ``state``; None to score it as it came.

        The coordinator asks when a proposal does not improve the head although blocks merged since
        its base: their new values may be in its way (routing: a path that now collides with one that
        merged). A kind that can repair that cheaply returns the repaired block value; it is scored like
        any proposal, and merged only if it improves the head.
        """
        return None

    @property
    def neighbourhood_leases(self) -> bool:
        """Whether each lease's block is formed at lease time (``form_lease``) rather than kept from a fixed
        partition. False by default: kinds whose structure is a partition (quadratic, job-shop) keep it."""
        return False

    def form_lease(self, state: State, block: int, held: frozenset[int], attempt: int) -> State | None:
        """``state`` with block ``block`` formed anew for the lease about to be granted on it, or None to
        keep it (kinds with ``neighbourhood_leases``).

        The kind's generators draw the block's new members from the whole current state, among the
        elements of the blocks not in ``held`` (leased by other agents, or their answers wait in the
        queue): those keep theirs, so no element is in two leases. What the new block leaves out goes to
        the other free blocks, so block sizes may change; the objective does not. ``attempt`` varies the
        answer between calls on the same state.
        """
        return None

    def neighbourhoods(self) -> tuple[str, ...]:
        """Names of the kind's ways to form blocks, for adaptive block selection (``coordinator/engine/adaptive.py``).

        The first must be ``"partition"``: keep the current blocks. The default adds ``"regroup"`` (the kind's
        own ``regroup``) when the kind overrides it. Kinds with more (random, by interaction, map- or
        query-based) list them and form them in ``form_blocks``.
        """
        return ("partition",) if type(self).regroup is Task.regroup else ("partition", "regroup")

    def form_blocks(
        self, state: State, generator: str, size: float, attempt: int, keep: frozenset[int] = frozenset()
    ) -> State | None:
        """``state`` with its blocks formed by ``generator`` (one of ``neighbourhoods()``), or None to keep them.

        ``size`` in (0, 1] is the target neighbourhood size as a fraction of a block: how much of each block
        the generator picks (the coordinator adapts it; a kind may ignore it). Same rules as ``regroup``: the
        objective does not change and every block keeps its size. ``attempt`` varies the answer. The blocks
        in ``keep`` must stay as they are: a kind that cannot form only the others returns None.
        """
        if generator == "partition":
            return None
        if generator == "regroup":
            return self.regroup(state, attempt, keep)
        raise ValueError(f"{self.kind} has no neighbourhood generator '{generator}'")

    # -- ownership: a block's agent writes only what its lease holds ----------------
    def block_elements(self, state: State, block: int) -> frozenset[Hashable]:
        """The elements block ``block`` holds in ``state`` (robots, jobs, queries, coordinates).

        The coordinator refuses, before scoring, a value whose ``written_elements`` are not all among them
        (rejection code ``outside_lease``). Read from ``state``, not from the instance, because blocks can be
        re-formed (``regroup``, ``form_blocks``): a lease holds what its block held in the state it was granted
        on. The default, the block itself (``("block", block)``), suits a positional kind whose value always
        lands on its own block's variables (a slice, a tuple in block order); a kind whose value names its
        elements overrides this and ``written_elements``.
        """
        return frozenset({("block", block)})

    def written_elements(self, state: State, block: int, value: Value) -> frozenset[Hashable]:
        """The elements a validated ``value`` proposed for ``block`` would change when applied to ``state``.

        Same vocabulary as ``block_elements``; anything outside that block's elements is a foreign write,
        refused as ``outside_lease``. Shared parts of the state that every block may change (sqlplan's index
        set) are not elements. The default, the block's own elements, is right only when the value cannot
        name anything else: a kind whose value names jobs, robots or queries must say which it names (the
        contract suite's ``test_a_foreign_write_is_reported_or_refused`` checks it).
        """
        return self.block_elements(state, block)

    @abc.abstractmethod
    def contract(self, state: State, block: int) -> dict[str, Any]:
        """What an agent needs for this block's decision (JSON-able), including correction data."""

    @abc.abstractmethod
    def validate(self, block: int, value: JSON) -> Value:
        """Decode and check a proposed block value; raise InvalidProposal with a reason."""

    def encode_value(self, value: Value) -> JSON:
        """The wire form of a block value (inverse of ``validate`` for valid values); identity by default."""
        return value

    @abc.abstractmethod
    def reference(self) -> Reference: ...

    def feasible(self, state: State) -> bool:
        """Whether the solution is usable as it stands (every state is, by default)."""
        return True

    # -- persistence (stores keep states as JSON) -------------------------
    def dump_state(self, state: State) -> JSON:
        """The state as JSON; the default suits kinds whose state already is JSON (lists, dicts, numbers)."""
        return state

    def load_state(self, data: JSON) -> State:
        return typing.cast(State, data)

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

    def lag_rounds(self, knobs: BaseModel) -> int:
        """Rounds a proposer with these knobs may find nothing while still converging (a stale view catching
        up, a randomized search between lucky budgets); the stall rule waits that much longer. Read from the
        knobs so the coordinator never builds an agent-side proposer to learn it."""
        return 0

    def scale(self) -> float:
        """A magnitude for tolerances (|F| at the start by default)."""
        return max(1.0, abs(self.objective(self.initial_state())))
