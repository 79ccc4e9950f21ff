"""The Task core every problem kind implements (docs/architecture.md §3).

A task owns the model: the coordinator only ever sees block values through
these methods, so a new kind is one module or one installed package (entry point
group ``blockopt.tasks``) and nothing else. Nine members are required (marked
abstract); the few others here have safe defaults. What a kind may offer beyond
the core (incremental scoring, neighbourhoods, ownership, persistence, views, an
a priori bound) are small protocols in ``tasks/capabilities.py``, which the
coordinator detects. States are immutable from the engine's point of view:
``apply`` returns a new state and the old one must stay valid (the engine keeps
it for rollback and for stale-correction bookkeeping).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, Protocol

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
"""The code of a value that writes elements its block does not hold (``Ownership.written_elements``)."""

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
    seconds: float | None = None
    """Seconds ``reference()`` took, set by the coordinator, not the kind (``timed_reference``): the task's
    clock leaves them out, so a slow reference takes nothing of the team's time limit."""

    def provenance(self) -> dict[str, Any]:
        """The fields above that are set (the run report's ``objective.reference_provenance``)."""
        fields = {
            "method": self.method,
            "solver": self.solver,
            "workers": self.workers,
            "seed": self.seed,
            "time_limit": self.time_limit,
            "proven": self.proven,
            "seconds": self.seconds,
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


class RenderedContract(dict[str, Any]):
    """A contract's data that carries its own JSON text (``json``), rendered by the kind from pieces it keeps
    between leases. The coordinator sends that text as it is instead of serializing the dict again (routing,
    300 robots: the coordinator's share of a lease went from 3.1 to 2.0 ms; docs/notes/2026-12-05-lease-costs.md);
    readers in the coordinator's process read the dict. Build it last: the text is not updated when the dict
    changes, and a kind's tests check that both say the same."""

    __slots__ = ("json",)

    def __init__(self, data: Mapping[str, Any], json: str) -> None:
        super().__init__(data)
        self.json = json


class HeadFeed(Protocol):
    """What merged since the head a search is on, asked for while it runs (``GET .../changes``).

    The worker hands one to its proposer for each lease (``Proposer.feed``); the answer's base version is
    the feed's ``version`` when the search ends, so a search that took the changes answers on that head."""

    version: int

    def __call__(self) -> JSON | None:
        """The kind's ``head_changes`` since ``version`` that arrived since the last call (``version`` then
        moves to the head's), or None: nothing merged, no reply yet, or the coordinator cannot tell. It does
        not wait on the coordinator: each call takes what has arrived and asks again."""


class Proposer(abc.ABC):
    """A heuristic that improves one block from its contract alone.

    Proposers live beside their kind so an agent and the coordinator agree on
    the model; they never see the whole state, only the contract (and, through ``feed``, what merged
    since it was drawn up).
    """

    feed: HeadFeed | None = None
    """Set by the worker for each lease; a proposer that can take the head's changes into a search under way
    may call it, one that cannot leaves it alone."""

    contract_kept: int | None = None
    """The version of the last contract this proposer keeps whole, or None: the worker then asks for its next
    contract written against it (``since``; the kind's ``ContractDeltas``), and the proposer reads it so. A
    proposer that does not keep its contracts leaves it None and gets every contract whole."""

    retry_pause: float = 0.05
    """Seconds a worker waits, after a call that found nothing, before it leases again: a search that is the
    same on the same contract would find nothing again until the plan has moved. A randomized search sets 0."""

    @abc.abstractmethod
    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        """Return a draft for ``contract["block"]``, or None when no improvement is found."""


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

    @abc.abstractmethod
    def block_value(self, state: State, block: int) -> Value: ...

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

    def solution(self, state: State) -> JSON:
        """The current solution as users want to read it (defaults to the state as stored: ``dump_state``
        where the kind offers ``Persistence``)."""
        dump = getattr(self, "dump_state", None)
        return dump(state) if dump is not None else state

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
