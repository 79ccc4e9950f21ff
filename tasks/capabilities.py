"""What a kind may offer beyond the ``Task`` core, one small protocol per capability, and what the
coordinator does when a kind does not offer it (docs/architecture.md §3).

A kind offers a capability by defining its members, with these signatures; it does not inherit
anything for it. The coordinator asks ``offers(task, Capability)`` and otherwise falls back to the
function here of the same name, which is always sound and usually slower or coarser:

=====================  ===================================  ============================================
capability             members                              without it
=====================  ===================================  ============================================
``IncrementalScoring``  ``evaluate_change``                  ``objective(apply(state, changes))``
``Screening``          ``screen_change``                    every change is scored exactly
``Footprints``         ``footprint``                        every change touches everything
``Interactions``       ``interaction``                      measured: Δp + Δq − Δpq (three scorings)
``BatchInteractions``  ``interactions``                     one ``interaction`` per pair
``APrioriBound``       ``a_priori``                         no a priori bound
``Regrouping``         ``regroup``                          blocks stay as the kind made them
``Neighbourhoods``     ``neighbourhoods``, ``form_blocks``  "partition", plus "regroup" with Regrouping
``LeaseNeighbourhoods`` ``neighbourhood_leases``,            a lease's block is the partition's
                       ``form_lease``
``ChangedBlocks``      ``changed_blocks``                   every block's value compared
``Rebasing``           ``rebase``                           a stale value is scored as it came
``HeadChanges``        ``head_changes``                     an agent's search stays on its lease's head
``LevelMerges``        ``moves``                            an answer that does not improve is refused
``ContractDeltas``     ``contract_since``                   every lease's contract is written whole
``Ownership``          ``block_elements``,                  a block holds ``("block", b)``, and every
                       ``written_elements``                 value writes exactly that
``Persistence``        ``dump_state``, ``load_state``       the state already is JSON
``Views``              ``view_model``, ``view_renderer``    no panel in the web UI
``Pictures``           ``pictures``                         no picture files
``WarmUp``             ``warm_up``                          the first calls pay for what they load
=====================  ===================================  ============================================

Detection is by the class's members, computed once per class (``offers``), so it costs a set lookup on
the engine's hot path.

One job over 400 lines: each capability's protocol, the rules its members keep, and its fallback, for the
one table above; split by topic, a kind's author would read several files to learn one contract.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from typing_extensions import get_protocol_members

if TYPE_CHECKING:
    from tasks.base import JSON, APriori, Task, Value

EVERYTHING: frozenset[Hashable] = frozenset({"*"})
"""The footprint of a change that may touch anything (the sound default)."""


# -- scoring ------------------------------------------------------------------------------------------
@runtime_checkable
class IncrementalScoring(Protocol):
    def evaluate_change(self, state: Any, changes: Mapping[int, Value]) -> float:
        """F after applying ``changes``, computed from what they change rather than from scratch."""


@runtime_checkable
class Screening(Protocol):
    def screen_change(self, state: Any, changes: Mapping[int, Value]) -> float | None:
        """A cheap prediction of ``evaluate_change(state, changes)``.

        For kinds whose exact objective is expensive (a query workload on a large database, a long
        simulation): a sampled or smaller copy, a calibrated cost model. When it returns a number, the
        round engine selects from predictions and runs ``evaluate_change`` only on the combination it is
        about to merge (and a bounded number of fallbacks, ``EngineSettings.screen_exact_checks``); the
        committed objective is always exact. Return None for every change or for none. It may raise
        ``InvalidProposal`` for a change it can prove invalid (e.g. a block the value may not touch).
        """


@runtime_checkable
class Footprints(Protocol):
    def footprint(self, state: Any, block: int, value: Value) -> frozenset[Hashable]:
        """What a change touches; disjoint footprints must mean zero interaction (the engine then skips
        measuring that pair)."""


@runtime_checkable
class Interactions(Protocol):
    def interaction(
        self, state: Any, p: tuple[int, Value], q: tuple[int, Value], f0: float | None = None
    ) -> float:
        """c_pq = Δ_p + Δ_q − Δ_pq (zero: the two changes do not interfere), cheaper than measuring it."""


@runtime_checkable
class BatchInteractions(Protocol):
    def interactions(
        self,
        state: Any,
        items: Sequence[tuple[int, Value]],
        pairs: Sequence[tuple[int, int]],
        f0: float | None,
    ) -> list[float]:
        """``interaction`` for each ``(a, b)`` index pair into ``items``; a round asks for all its pairs at
        once so a kind with a closed form can batch them (one matrix product instead of O(n²) calls)."""


@runtime_checkable
class APrioriBound(Protocol):
    def a_priori(self) -> APriori | None:
        """The kind's a priori bound, when its problem data give one."""


# -- neighbourhoods and regrouping ---------------------------------------------------------------------
@runtime_checkable
class Regrouping(Protocol):
    def regroup(self, state: Any, attempt: int, keep: frozenset[int] = frozenset()) -> Any | None:
        """The same solution with its variables grouped into blocks differently, or None to keep the grouping.

        The coordinator asks after a round that merged nothing: a block's agent can only move its own
        variables, so an improvement that needs two blocks to move together is out of every agent's reach
        until they share a block. ``attempt`` varies the answer between calls on the same state. The
        objective must not change, and every block keeps its size, so a stateless ``validate`` still
        holds. The blocks in ``keep`` are leased: they must stay as they are, and the others are regrouped
        among their own variables; a kind that cannot do that returns None when ``keep`` is not empty.
        """


@runtime_checkable
class Neighbourhoods(Protocol):
    def neighbourhoods(self) -> tuple[str, ...]:
        """Names of the kind's ways to form blocks, for adaptive block selection
        (``coordinator/engine/adaptive.py``). The first must be ``"partition"``: keep the current blocks."""

    def form_blocks(
        self, state: Any, generator: str, size: float, attempt: int, keep: frozenset[int] = frozenset()
    ) -> Any | None:
        """``state`` with its blocks formed by ``generator`` (one of ``neighbourhoods()``), or None: kept.

        ``size`` in (0, 1] is the target neighbourhood size as a fraction of a block (the coordinator adapts
        it; a kind may ignore it). Same rules as ``regroup``: the objective does not change, every block
        keeps its size, the blocks in ``keep`` stay as they are (a kind that cannot form only the others
        returns None).
        """


@runtime_checkable
class LeaseNeighbourhoods(Protocol):
    @property
    def neighbourhood_leases(self) -> bool:
        """Whether this instance forms each lease's block at lease time (a kind may make it a parameter)."""

    def form_lease(self, state: Any, block: int, held: frozenset[int], attempt: int) -> Any | None:
        """``state`` with block ``block`` formed anew for the lease about to be granted on it, or None to
        keep it.

        The kind draws the block's new members from the whole current state, among the elements of the
        blocks not in ``held`` (leased by other agents, or their answers wait in the queue): those keep
        theirs, so no element is in two leases. What the new block leaves out goes to the other free
        blocks, so block sizes may change; the objective does not. ``attempt`` varies the answer.

        A kind may instead let leases overlap (routing's ``lease_overlap``): the block draws elements other
        blocks hold too, and the others keep theirs. Its values must then say which elements they leave as
        they are (routing: null), so that an answer never moves back what another answer moved meanwhile;
        the engine merges an answer only if it improves the head as it is when the answer arrives.
        """


@runtime_checkable
class ChangedBlocks(Protocol):
    def changed_blocks(self, before: Any, after: Any) -> list[int]:
        """The blocks whose values differ between ``before`` and ``after = form_lease(before, ...)``,
        ascending (each gets the new version). Without it, every block's value is built twice and compared."""


@runtime_checkable
class Rebasing(Protocol):
    def rebase(self, state: Any, block: int, value: Value) -> Value | None:
        """``value``, computed on an older version, adapted to ``state``; None to score it as it came.

        The coordinator asks when a proposal does not improve the head although blocks merged since its
        base: their new values may be in its way (routing: a path that now collides with one that merged).
        The result is scored like any proposal, and merged only if it improves the head.
        """


@runtime_checkable
class HeadChanges(Protocol):
    def head_changes(self, before: Any, after: Any) -> JSON:
        """What changed from the state ``before`` to the later head ``after``, as JSON the kind's proposer
        takes into a search under way (routing: the robots whose paths changed, with those paths).

        Agents that search the whole state in parallel find the same improvements: of the answers 16
        agents sent on routing k = 300 that met exactly one merge since their lease, more than half had
        changed a robot that merge had changed too, and two thirds of those were refused. A search that
        asks for the head's changes every few milliseconds (``GET /v1/tasks/{id}/changes``) answers on the
        head of a few milliseconds ago instead of the head of its lease
        (docs/notes/2026-12-06-searches-follow-the-head.md)."""


@runtime_checkable
class LevelMerges(Protocol):
    def moves(self, state: Any, block: int, value: Value) -> bool:
        """Whether ``value`` changes ``state`` (validated, scored as keeping the objective): such an answer
        is merged, so that the head walks the plateau with every agent's search instead of only one agent's
        walk reaching the next improvement.

        A kind whose searches walk among equal solutions offers it (routing: its LNS keeps a step that
        does not lengthen the plan). In a model with no protocol cost, sixteen whole-plan searches merged only
        when they improved kept pace with two or three searches (random-32-32-10, k = 300); merged every
        0.05 s also when level, with six to seventeen (docs/notes/2026-12-07-the-head-walks.md). The round
        record counts such a merge as none: the books and the stall rule read improvements."""


@runtime_checkable
class ContractDeltas(Protocol):
    def contract_since(self, before: Any, state: Any, block: int) -> JSON | None:
        """``contract(state, block)`` written for an agent that keeps the contract it got at ``before``: what
        it holds already may be left out, as the kind's proposer knows to read it; None to write it whole.

        An agent asks with ``since`` (``POST .../leases?since=V``, and with ``next_lease``) only when its
        proposer keeps that contract (``Proposer.contract_kept``); the coordinator asks the kind only when it
        still holds version V (``BuiltTask.recent``). Routing's whole-plan contract at k = 300 is 78 KB, and
        a team of sixteen whose plan walks with it leases about 190 times a second; between two leases of
        one agent some tens of its 300 paths change."""


# -- ownership: a block's agent writes only what its lease holds --------------------------------------
@runtime_checkable
class Ownership(Protocol):
    def block_elements(self, state: Any, block: int) -> frozenset[Hashable]:
        """The elements block ``block`` holds in ``state`` (robots, jobs, queries, coordinates), read from
        the state because blocks can be re-formed: a lease holds what its block held when granted."""

    def written_elements(self, state: Any, block: int, value: Value) -> frozenset[Hashable]:
        """The elements a validated ``value`` proposed for ``block`` would change when applied to ``state``;
        anything outside that block's elements is refused as ``outside_lease``. Shared parts every block
        may change (sqlplan's index set) are not elements."""


# -- persistence, views, pictures ---------------------------------------------------------------------
@runtime_checkable
class Persistence(Protocol):
    def dump_state(self, state: Any) -> JSON:
        """The state as JSON (stores keep states as JSON)."""

    def load_state(self, data: JSON) -> Any:
        """The inverse of ``dump_state``."""


@runtime_checkable
class Views(Protocol):
    def view_model(self, state: Any) -> JSON | None:
        """What the kind's own panel in the web UI draws, as JSON; None shows no panel."""

    @classmethod
    def view_renderer(cls) -> Path | None:
        """The kind's browser module (ES module exporting ``render(element, model)``) shipped beside it."""


@runtime_checkable
class Pictures(Protocol):
    def pictures(self, state: Any, stem: str) -> list[str]:
        """Draw the solution as files named ``stem`` + suffix; return their paths."""


# -- warming up -----------------------------------------------------------------------------------------
@runtime_checkable
class WarmUp(Protocol):
    def warm_up(self) -> None:
        """Compile or load now what the kind's hot paths will need (routing: its numba kernels, about 6 s
        cold, 0.2 s from numba's on-disk cache), so that no proposal's budget and no scoring pays for it.

        Called once per process that builds the task, before its first use: by the coordinator while it
        prepares a task or builds one a replica loads (in a thread, off the event loop), and by an agent
        after joining, before its first lease. Repeated calls must be cheap."""


CAPABILITIES: tuple[type, ...] = (
    IncrementalScoring,
    Screening,
    Footprints,
    Interactions,
    BatchInteractions,
    APrioriBound,
    Regrouping,
    Neighbourhoods,
    LeaseNeighbourhoods,
    ChangedBlocks,
    Rebasing,
    HeadChanges,
    LevelMerges,
    ContractDeltas,
    Ownership,
    Persistence,
    Views,
    Pictures,
    WarmUp,
)


@functools.cache
def capabilities_of(cls: type) -> frozenset[type]:
    """The capabilities a kind's class offers: those whose every member it defines."""
    return frozenset(c for c in CAPABILITIES if all(hasattr(cls, m) for m in get_protocol_members(c)))


def half_offered(cls: type) -> list[str]:
    """Capabilities of which ``cls`` defines some members but not all (a typo, or a member forgotten): the
    coordinator would ignore what it does define, so the registry refuses such a kind, naming what is
    missing."""
    out = []
    for c in CAPABILITIES:
        members = sorted(get_protocol_members(c))
        missing = [m for m in members if not hasattr(cls, m)]
        if missing and len(missing) < len(members):
            defined = [m for m in members if m not in missing]
            out.append(f"{c.__name__} needs {', '.join(missing)} beside {', '.join(defined)}")
    return out


def offers(task: Task[Any, Any] | type[Task[Any, Any]], capability: type) -> bool:
    cls = task if isinstance(task, type) else type(task)
    return capability in capabilities_of(cls)


# -- what the coordinator calls: the kind's member, or the sound default --------------------------------
def evaluate_change(task: Task[Any, Any], state: Any, changes: Mapping[int, Value]) -> float:
    if offers(task, IncrementalScoring):
        return cast(IncrementalScoring, task).evaluate_change(state, changes)
    return task.objective(task.apply(state, changes))


def screen_change(task: Task[Any, Any], state: Any, changes: Mapping[int, Value]) -> float | None:
    if offers(task, Screening):
        return cast(Screening, task).screen_change(state, changes)
    return None


def screens(task: Task[Any, Any]) -> bool:
    return offers(task, Screening)


def footprint(task: Task[Any, Any], state: Any, block: int, value: Value) -> frozenset[Hashable]:
    if offers(task, Footprints):
        return cast(Footprints, task).footprint(state, block, value)
    return EVERYTHING


def measured_interaction(
    task: Task[Any, Any], state: Any, p: tuple[int, Value], q: tuple[int, Value], f0: float | None = None
) -> float:
    """c_pq measured: three scorings of the changes, alone and together."""
    base = task.objective(state) if f0 is None else f0
    d_p = base - evaluate_change(task, state, {p[0]: p[1]})
    d_q = base - evaluate_change(task, state, {q[0]: q[1]})
    d_pq = base - evaluate_change(task, state, {p[0]: p[1], q[0]: q[1]})
    return d_p + d_q - d_pq


def interaction(
    task: Task[Any, Any], state: Any, p: tuple[int, Value], q: tuple[int, Value], f0: float | None = None
) -> float:
    if offers(task, Interactions):
        return cast(Interactions, task).interaction(state, p, q, f0)
    return measured_interaction(task, state, p, q, f0)


def interactions(
    task: Task[Any, Any],
    state: Any,
    items: Sequence[tuple[int, Value]],
    pairs: Sequence[tuple[int, int]],
    f0: float | None = None,
) -> list[float]:
    if offers(task, BatchInteractions):
        return cast(BatchInteractions, task).interactions(state, items, pairs, f0)
    return [interaction(task, state, items[a], items[b], f0) for a, b in pairs]


def a_priori(task: Task[Any, Any]) -> APriori | None:
    return cast(APrioriBound, task).a_priori() if offers(task, APrioriBound) else None


def regroup(task: Task[Any, Any], state: Any, attempt: int, keep: frozenset[int] = frozenset()) -> Any | None:
    return cast(Regrouping, task).regroup(state, attempt, keep) if offers(task, Regrouping) else None


def neighbourhoods(task: Task[Any, Any]) -> tuple[str, ...]:
    if offers(task, Neighbourhoods):
        return cast(Neighbourhoods, task).neighbourhoods()
    return ("partition", "regroup") if offers(task, Regrouping) else ("partition",)


def form_blocks(
    task: Task[Any, Any],
    state: Any,
    generator: str,
    size: float,
    attempt: int,
    keep: frozenset[int] = frozenset(),
) -> Any | None:
    if offers(task, Neighbourhoods):
        return cast(Neighbourhoods, task).form_blocks(state, generator, size, attempt, keep)
    if generator == "partition":
        return None
    if generator == "regroup":
        return regroup(task, state, attempt, keep)
    raise ValueError(
        f"{getattr(task, 'kind', type(task).__name__)} has no neighbourhood generator '{generator}'"
    )


def forms_leases(task: Task[Any, Any]) -> bool:
    """Whether the kind (this instance) forms each lease's block at lease time."""
    return offers(task, LeaseNeighbourhoods) and cast(LeaseNeighbourhoods, task).neighbourhood_leases


def form_lease(
    task: Task[Any, Any], state: Any, block: int, held: frozenset[int], attempt: int
) -> Any | None:
    if not forms_leases(task):
        return None
    return cast(LeaseNeighbourhoods, task).form_lease(state, block, held, attempt)


def changed_blocks(task: Task[Any, Any], before: Any, after: Any, n_blocks: int) -> list[int]:
    if offers(task, ChangedBlocks):
        return cast(ChangedBlocks, task).changed_blocks(before, after)
    return [b for b in range(n_blocks) if task.block_value(after, b) != task.block_value(before, b)]


def rebase(task: Task[Any, Any], state: Any, block: int, value: Value) -> Value | None:
    return cast(Rebasing, task).rebase(state, block, value) if offers(task, Rebasing) else None


def head_changes(task: Task[Any, Any], before: Any, after: Any) -> JSON | None:
    """The kind's ``head_changes``, or None: without it an agent's search stays on its lease's head."""
    return cast(HeadChanges, task).head_changes(before, after) if offers(task, HeadChanges) else None


def contract_since(task: Task[Any, Any], before: Any, state: Any, block: int) -> JSON | None:
    """The kind's ``contract_since``, or None: the contract is written whole."""
    if not offers(task, ContractDeltas):
        return None
    return cast(ContractDeltas, task).contract_since(before, state, block)


def moves(task: Task[Any, Any], state: Any, block: int, value: Value) -> bool:
    """The kind's ``moves``; without it no answer is merged for keeping the objective."""
    return cast(LevelMerges, task).moves(state, block, value) if offers(task, LevelMerges) else False


def block_elements(task: Task[Any, Any], state: Any, block: int) -> frozenset[Hashable]:
    if offers(task, Ownership):
        return cast(Ownership, task).block_elements(state, block)
    return frozenset({("block", block)})


def written_elements(task: Task[Any, Any], state: Any, block: int, value: Value) -> frozenset[Hashable]:
    if offers(task, Ownership):
        return cast(Ownership, task).written_elements(state, block, value)
    return block_elements(task, state, block)


def dump_state(task: Task[Any, Any], state: Any) -> JSON:
    return cast(Persistence, task).dump_state(state) if offers(task, Persistence) else state


def load_state(task: Task[Any, Any], data: JSON) -> Any:
    return cast(Persistence, task).load_state(data) if offers(task, Persistence) else data


def view_model(task: Task[Any, Any], state: Any) -> JSON | None:
    return cast(Views, task).view_model(state) if offers(task, Views) else None


def warm_up(task: Task[Any, Any]) -> None:
    """The kind's ``warm_up``; a kind without it has nothing to load ahead."""
    if offers(task, WarmUp):
        cast(WarmUp, task).warm_up()


def view_renderer(cls: type[Task[Any, Any]]) -> Path | None:
    return cast(type[Views], cls).view_renderer() if offers(cls, Views) else None


def pictures(task: Task[Any, Any], state: Any, stem: str) -> list[str]:
    return cast(Pictures, task).pictures(state, stem) if offers(task, Pictures) else []
