"""The round engine: validate, score, build the interference graph, select, commit (docs/architecture.md §4).

Pure: it takes a snapshot and proposals and returns the next snapshot, the
round record and one verdict per proposal. Stores, HTTP and agents live
elsewhere, so the algorithm is testable (and benchmarkable) on its own.

One job over 400 lines: one round of the engine, its steps in the order they run.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import networkx as nx

from coordinator import errors
from coordinator.engine import screened
from coordinator.engine.convergence import (
    AccountingError,
    MergedScore,
    RoundConstants,
    a_priori_check,
    check_accounting,
    round_constants,
)
from coordinator.engine.interference import candidate_pairs
from coordinator.engine.ownership import check_inside_lease
from coordinator.engine.records import MergeKind, MergePolicy, Proposal, RoundRecord, Snapshot, Verdict
from coordinator.engine.selection import (
    best_pairwise_combination,
    max_weight_independent_set,
    pairwise_model_value,
)
from tasks import capabilities
from tasks.base import InvalidProposal as TaskInvalidProposal
from tasks.base import Reference, Task

log = logging.getLogger("blockopt.engine")


def _strict_accounting() -> bool:
    return os.environ.get("BLOCKOPT_STRICT_ACCOUNTING", "") not in ("", "0")


@dataclass(frozen=True)
class EngineSettings:
    merge_policy: MergePolicy = "checked"
    relative_tolerance: float = 1e-12
    """Objective resolution relative to the task's scale: smaller differences count as zero."""
    model_agreement: float = 1e-6
    """Relative disagreement between pairwise model and exact check that triggers the greedy fallback."""
    strict_accounting: bool = field(default_factory=_strict_accounting)
    """Raise ``AccountingError`` when a round's books do not balance (tests); otherwise log and count it."""
    screen_exact_checks: int = 5
    """Kinds that screen (``Screening.screen_change``): exact evaluations per round at most, the selected
    combination's and the best-first fallback's (``coordinator/engine/screened.py``)."""


@dataclass
class RoundOutcome:
    snapshot: Snapshot
    record: RoundRecord
    verdicts: list[Verdict]
    constants: RoundConstants
    committed: bool
    """The snapshot is new (a merge, or a regrouping): callers store it."""


@dataclass
class _Scored:
    proposal: Proposal
    value: Any
    gain: float
    footprint: frozenset[Hashable] = field(default_factory=frozenset)
    repaired: bool = False
    """The kind adapted the value to the head (``Rebasing.rebase``): what merges is not what the agent sent."""


_T = TypeVar("_T")


def _blocks(scored: list[_Scored], subset: set[int]) -> set[int]:
    return {scored[i].proposal.block for i in subset}


class _Meter:
    """Times the task's objective evaluations, so engine overhead can be reported without them.

    In a screened round (``screen``) the selection's gains come from ``Screening.screen_change``: ``screens``
    counts those evaluations."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.screen: bool | None = None
        """None until the task answers ``screen_change`` for the round's first proposal (None: no screen)."""
        self.screens = 0

    def __call__(self, fn: Callable[..., _T], *args: Any) -> _T:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.seconds += time.perf_counter() - t0


def timed_reference(task: Task[Any], clock: Callable[[], float] = time.monotonic) -> Reference:
    """The kind's reference with the seconds it took on ``clock`` (``Reference.seconds``, in its provenance):
    the time a task's clock leaves out (``runtime/tasks.py`` ``begin``)."""
    started = clock()
    reference = task.reference()
    return replace(reference, seconds=round(max(0.0, clock() - started), 3))


class RoundEngine:
    def __init__(
        self, task: Task[Any], settings: EngineSettings | None = None, reference: Reference | None = None
    ) -> None:
        """``reference``: the kind's, already computed (``timed_reference``); None: ask the kind."""
        self.task = task
        self.settings = settings or EngineSettings()
        self.tolerance = self.settings.relative_tolerance * task.scale()
        self.reference = reference if reference is not None else task.reference()
        self.a_priori = capabilities.a_priori(
            task,
        )

    # -- snapshots --------------------------------------------------------
    def initial_snapshot(self) -> Snapshot:
        state = self.task.initial_state()
        return Snapshot(
            version=0,
            objective=self.task.objective(state),
            block_versions=tuple(0 for _ in range(self.task.n_blocks)),
            state=state,
        )

    def gap(self, objective: float) -> float:
        return objective - self.reference.value

    # -- admission ----------------------------------------------------------
    def admit(self, snap: Snapshot, proposal: Proposal) -> Any:
        """The decoded block value, or a typed error (invalid, stale, ``outside_lease``).

        The one admission of every proposal, in rounds and in async mode: nothing is scored before it. A
        value that writes elements its block does not hold in the head (``coordinator/engine/ownership.py``)
        is refused here, so nothing of it merges."""
        if not 0 <= proposal.block < self.task.n_blocks:
            raise errors.ProposalRefused(
                f"block {proposal.block} does not exist (0..{self.task.n_blocks - 1})",
                reason_code="wrong_block",
            )
        if proposal.base_version > snap.version:
            raise errors.ProposalRefused(
                f"base version {proposal.base_version} is newer than the current version {snap.version}",
                reason_code="future_base",
            )
        if snap.block_versions[proposal.block] > proposal.base_version:
            raise errors.StaleBase(
                f"block {proposal.block} changed at version {snap.block_versions[proposal.block]},"
                f" after the proposal's base version {proposal.base_version}",
                block=proposal.block,
                base_version=proposal.base_version,
                current_version=snap.version,
            )
        try:
            value = self.task.validate(proposal.block, proposal.value)
        except TaskInvalidProposal as exc:
            raise errors.ProposalRefused(exc.reason, reason_code=exc.code) from None
        check_inside_lease(self.task, snap.state, proposal.block, value)
        return value

    # -- the round ----------------------------------------------------------
    def run_round(
        self,
        snap: Snapshot,
        proposals: Sequence[Proposal],
        round_index: int,
        regroup: bool = False,
        predicted_gap: float | None = None,
        former: Callable[[Any, float, frozenset[int]], Any | None] | None = None,
        keep: frozenset[int] = frozenset(),
        after_merge: bool = False,
    ) -> RoundOutcome:
        """Score, select and commit one round; with ``regroup``, a round that merges nothing asks the task
        for a new grouping of its variables (``Regrouping.regroup``), committed as a version with the same objective.
        The blocks in ``keep`` (leased: an agent is working on them) keep their variables and their versions,
        so the work under way stays current. With ``after_merge`` (async mode's ``regroup_after: arrival``), a round
        that merged regroups too, in the same new version.
        With ``former`` too (adaptive selection), any such round asks ``former(state, objective, merged blocks)``
        instead.

        ``predicted_gap`` is the one-step forecast the caller made from earlier rounds before calling: it is
        recorded with its hit or miss. The kind's a priori bound is checked where its precondition holds, and
        the books are checked every round (``check_accounting``).
        """
        started = time.perf_counter()
        meter = _Meter()
        verdicts: dict[str, Verdict] = {}

        def reject(
            p: Proposal, code: str, reason: str, delta: float | None = None, screened: float | None = None
        ) -> None:
            verdicts[p.id] = Verdict(
                proposal_id=p.id,
                block=p.block,
                status="rejected",
                code=code,
                reason=reason,
                round=round_index,
                predicted=p.predicted_improvement,
                delta=delta,
                screened=screened,
            )

        state, f0 = snap.state, snap.objective
        improving: list[_Scored] = []
        exact_blocks: set[int] = set()
        for p in proposals:
            try:
                value = self.admit(snap, p)
            except errors.BlockoptError as exc:
                reject(p, exc.context.get("reason_code") or exc.code, exc.message)
                continue
            if p.exact_minimizer and p.base_version == snap.version:
                exact_blocks.add(p.block)
            try:
                gain = f0 - self._standalone(state, {p.block: value}, meter)
                repaired = False
                if gain <= self.tolerance and p.base_version < snap.version:
                    value, gain, repaired = self._rebase(state, f0, p.block, value, gain, meter)
            except TaskInvalidProposal as exc:  # found only by running it (e.g. a plan with other rows)
                reject(p, exc.code, exc.reason)
                continue
            if gain <= self.tolerance and meter.screen:
                reject(
                    p,
                    "screen_not_improving",
                    f"screened standalone improvement {gain:.6g} is not positive (not run exactly)",
                    screened=gain,
                )
                continue
            if gain <= self.tolerance and not self._level(state, p.block, value, gain):
                reject(p, "not_improving", f"standalone improvement {gain:.6g} is not positive", gain)
                continue
            fp = capabilities.footprint(self.task, state, p.block, value)
            improving.append(_Scored(p, value, gain, fp, repaired))

        graph = self._interference_graph(state, f0, improving, meter)
        chosen, checks = self._select(state, f0, improving, graph, meter)
        verified, selected = None, set[int]()
        if meter.screen:  # the selection was screened: measure exactly only what is about to be merged
            verified = self._verify(state, f0, improving, chosen, meter)
            selected, chosen, checks = chosen, verified.merge, len(verified.checks)

        changes = {improving[i].proposal.block: improving[i].value for i in chosen}
        committed = False
        new_snap = snap
        if changes:
            new_state = self.task.apply(state, changes)
            f1 = meter(self.task.objective, new_state)
            level = f1 <= f0 + self.tolerance and any(improving[i].gain <= self.tolerance for i in chosen)
            if f1 < f0 - self.tolerance or level:  # a level answer: the head walks with it (LevelMerges)
                version = snap.version + 1
                blocks = list(snap.block_versions)
                for b in changes:
                    blocks[b] = version
                new_snap = Snapshot(version, f1, tuple(blocks), new_state)
                committed = True
        regrouped = False
        if regroup and former is not None:  # adaptive selection: new blocks after any round (same objective)
            merged_blocks = frozenset(changes) if committed else frozenset()
            grouped = former(new_snap.state, new_snap.objective, merged_blocks)
            if grouped is not None:
                version = snap.version + 1
                new_snap = Snapshot(
                    version, new_snap.objective, tuple(version for _ in snap.block_versions), grouped
                )
                regrouped = True
        elif regroup and (after_merge or not committed):
            grouped = capabilities.regroup(self.task, new_snap.state, round_index, keep)
            if grouped is not None:  # every other block changed: proposals on older versions are stale
                version = snap.version + 1
                kept = tuple(v if b in keep else version for b, v in enumerate(new_snap.block_versions))
                new_snap = Snapshot(version, new_snap.objective, kept, grouped)
                regrouped = True

        merged_scores: list[MergedScore] = []
        if verified is not None:
            if not committed:  # (the commit re-measured no improvement: nothing was merged)
                for c in verified.checks:
                    c.merged = False
            outcomes = [(s.proposal, s.gain) for s in improving]
            found = screened.verdicts(outcomes, selected, verified, committed, round_index, snap.version)
            verdicts.update((v.proposal_id, v) for v in found)
            merged_scores = screened.books(outcomes, verified, committed)
        for i, s in enumerate(improving if verified is None else ()):
            p = s.proposal
            if committed and i in chosen:
                rebased = p.base_version < snap.version
                how = "repaired against the head" if s.repaired else f"rebased from version {p.base_version}"
                verdicts[p.id] = Verdict(
                    proposal_id=p.id,
                    block=p.block,
                    status="accepted",
                    code="merged",
                    reason=("merged" if s.gain > self.tolerance else "merged level: the plan walks with it")
                    + (f" ({how})" if rebased or s.repaired else ""),
                    repaired=s.repaired,
                    rebased=rebased,
                    round=round_index,
                    predicted=p.predicted_improvement,
                    delta=s.gain,
                )
                merged_scores.append(MergedScore(p.predicted_improvement, s.gain))
            elif i in chosen:
                reject(
                    p, "combination_worse", "the checked combination did not improve the objective", s.gain
                )
            else:
                reject(p, "not_selected", "interferes with a better combination in this round", s.gain)

        consts = round_constants(f0, new_snap.objective, self.reference.value, merged_scores, self.tolerance)
        # a level merge (``LevelMerges``) moved the head and not the objective: the books count improvements
        merged_set = chosen if committed and new_snap.objective < f0 - self.tolerance else set()
        merge_kind: MergeKind = "none"
        if merged_set:
            interfering_merged = graph.subgraph(merged_set).number_of_edges() > 0
            merge_kind = "checked_combination" if interfering_merged or verified else "independent"
        problems = check_accounting(
            consts.gap_before,
            consts.gap_after,
            consts.gamma,
            merged_scores,
            self.tolerance,
            separable=merge_kind == "independent" and verified is None,
            screened=verified is not None,
        )
        if problems:
            message = f"round {round_index} of {self.task.name}: books do not balance: " + "; ".join(problems)
            if self.settings.strict_accounting:
                raise AccountingError(message)
            log.error(message)
        prior = None
        if self.a_priori is not None:
            missing = self.task.n_blocks - len(exact_blocks)
            failed = (
                None
                if missing == 0
                else f"{missing} of {self.task.n_blocks} blocks had no exact minimizer on version {snap.version}"
            )
            prior = a_priori_check(
                self.a_priori.factor[self.settings.merge_policy],
                consts.gap_before,
                consts.gap_after,
                self.tolerance,
                failed,
            )
        elapsed = time.perf_counter() - started
        record = RoundRecord(
            round=round_index,
            version=new_snap.version,
            objective=new_snap.objective,
            gap=self.gap(new_snap.objective),
            proposals=len(proposals),
            accepted=len(merged_set),
            interfering=graph.number_of_edges(),
            merge_kind=merge_kind,
            kappa=consts.kappa,
            gamma=consts.gamma,
            delta=consts.delta,
            predicted_gap=predicted_gap,
            hit=None if predicted_gap is None else consts.gap_after <= predicted_gap + self.tolerance,
            a_priori_rhs=prior.rhs if prior else None,
            a_priori_held=prior.held if prior else None,
            a_priori_precondition=prior.precondition_failed if prior else None,
            accounting_violations=len(problems),
            checks=checks,
            engine_seconds=elapsed - meter.seconds,
            eval_seconds=meter.seconds,
            regrouped=regrouped,
            screen=None if verified is None else verified.checks,
            screened=meter.screens,
        )
        ordered = [verdicts[p.id] for p in proposals]
        return RoundOutcome(new_snap, record, ordered, consts, committed or regrouped)

    # -- screening ----------------------------------------------------------------
    def _rebase(
        self, state: Any, f0: float, block: int, value: Any, gain: float, meter: _Meter
    ) -> tuple[Any, float, bool]:
        """(value, gain, repaired): the kind's repair of a proposal that blocks merged since its base got in
        the way of (``Rebasing.rebase``), when the repair improves on the head; else the proposal as it came."""
        fixed = meter(capabilities.rebase, self.task, state, block, value)
        if fixed is None:
            return value, gain, False
        fixed_gain = f0 - self._standalone(state, {block: fixed}, meter)
        kept = fixed_gain > self.tolerance or self._level(state, block, fixed, fixed_gain)
        return (fixed, fixed_gain, True) if kept else (value, gain, False)

    def _level(self, state: Any, block: int, value: Any, gain: float) -> bool:
        """An answer that keeps the objective and changes the state, of a kind that merges such answers
        (``LevelMerges``): the head walks the plateau with the agents' searches."""
        return gain >= -self.tolerance and capabilities.moves(self.task, state, block, value)

    def _standalone(self, state: Any, changes: dict[int, Any], meter: _Meter) -> float:
        """F after one proposal: screened when the kind screens (decided by the round's first answer)."""
        if meter.screen is not False:
            predicted = meter(capabilities.screen_change, self.task, state, changes)
            if predicted is not None:
                meter.screen = True
                meter.screens += 1
                return float(predicted)
            if meter.screen is None:
                meter.screen = False
        return meter(capabilities.evaluate_change, self.task, state, changes)

    def _verify(
        self, state: Any, f0: float, scored: list[_Scored], chosen: set[int], meter: _Meter
    ) -> screened.Verified:
        def exact(subset: set[int]) -> float:
            changes = {scored[i].proposal.block: scored[i].value for i in subset}
            return f0 - meter(capabilities.evaluate_change, self.task, state, changes)

        return screened.verify(
            exact,
            lambda subset: self._exact_gain(state, f0, scored, subset, meter),
            [s.gain for s in scored],
            [s.proposal.block for s in scored],
            chosen,
            self.settings.screen_exact_checks,
            self.tolerance,
        )

    # -- interference ---------------------------------------------------------
    def _interference_graph(self, state: Any, f0: float, scored: list[_Scored], meter: _Meter) -> nx.Graph:
        graph = nx.Graph()
        for i, s in enumerate(scored):
            graph.add_node(i, gain=s.gain)
        same_block, overlapping = candidate_pairs(
            [s.proposal.block for s in scored], [s.footprint for s in scored]
        )
        graph.add_edges_from((i, j, {"exclusive": True, "c": float("inf")}) for i, j in same_block)
        if overlapping and meter.screen:  # c_pq = Δ_p + Δ_q − Δ_pq, all three screened
            values = [
                scored[i].gain + scored[j].gain - self._exact_gain(state, f0, scored, {i, j}, meter)
                for i, j in overlapping
            ]
            graph.add_edges_from(
                (i, j, {"c": c})
                for (i, j), c in zip(overlapping, values, strict=True)
                if abs(c) > self.tolerance
            )
        elif overlapping:  # all pairs in one call: a kind with a closed form batches them
            items = [(s.proposal.block, s.value) for s in scored]
            values = meter(capabilities.interactions, self.task, state, items, overlapping, f0)
            graph.add_edges_from(
                (i, j, {"c": c})
                for (i, j), c in zip(overlapping, values, strict=True)
                if abs(c) > self.tolerance
            )
        return graph

    # -- selection --------------------------------------------------------------
    def _exact_gain(
        self, state: Any, f0: float, scored: list[_Scored], subset: set[int], meter: _Meter
    ) -> float:
        """The gain of a combination: exact, or screened in a screened round (then checked by ``_verify``)."""
        changes = {scored[i].proposal.block: scored[i].value for i in subset}
        if meter.screen:
            predicted = meter(capabilities.screen_change, self.task, state, changes)
            if predicted is not None:
                meter.screens += 1
                return f0 - float(predicted)
        return f0 - meter(capabilities.evaluate_change, self.task, state, changes)

    def _agrees(self, predicted: float, exact: float) -> bool:
        return abs(predicted - exact) <= self.tolerance + self.settings.model_agreement * abs(predicted)

    def _greedy_checked(
        self,
        state: Any,
        f0: float,
        scored: list[_Scored],
        groups: list[set[int]],
        gains: list[float],
        meter: _Meter,
    ) -> tuple[set[int], float, int]:
        """Add groups best-first, keeping each addition only if the exact objective improves."""
        order = sorted(range(len(groups)), key=lambda k: -gains[k])
        chosen, best, checks = set(groups[order[0]]), gains[order[0]], 0
        for k in order[1:]:
            if _blocks(scored, chosen) & _blocks(scored, groups[k]):
                continue  # two values for one block can never be merged together
            trial = chosen | groups[k]
            exact = self._exact_gain(state, f0, scored, trial, meter)
            checks += 1
            if exact > best + self.tolerance:
                chosen, best = trial, exact
        return chosen, best, checks

    def _select(
        self, state: Any, f0: float, scored: list[_Scored], graph: nx.Graph, meter: _Meter
    ) -> tuple[set[int], int]:
        if not scored:
            return set(), 0
        checks = 0
        if self.settings.merge_policy == "independent":
            chosen = max_weight_independent_set(graph)
            groups = [{i} for i in chosen]
            gains = [scored[i].gain for i in chosen]
        else:
            groups, gains = [], []
            for comp in nx.connected_components(graph):
                # a copy, not a view: every pass over a view's edges filters them again
                sub = graph if len(comp) == len(graph) else graph.subgraph(comp).copy()
                group, gain, used = self._checked_component(state, f0, scored, sub, meter)
                groups.append(group)
                gains.append(gain)
                checks += used
        union = set().union(*groups)
        if len(groups) == 1:
            return union, checks
        exact = self._exact_gain(state, f0, scored, union, meter)
        checks += 1
        if self._agrees(sum(gains), exact) and exact > 0:
            return union, checks
        chosen, _, used = self._greedy_checked(state, f0, scored, groups, gains, meter)
        return chosen, checks + used

    def _checked_component(
        self, state: Any, f0: float, scored: list[_Scored], sub: nx.Graph, meter: _Meter
    ) -> tuple[set[int], float, int]:
        """The component's best combination under the pairwise model, checked exactly."""
        nodes = list(sub.nodes)
        best_single = max(nodes, key=lambda n: scored[n].gain)
        if len(nodes) == 1:
            return {best_single}, scored[best_single].gain, 0
        subset = best_pairwise_combination(sub)
        predicted = pairwise_model_value(sub, subset)
        exact = (
            self._exact_gain(state, f0, scored, subset, meter)
            if len(subset) > 1
            else scored[best_single].gain
        )
        checks = 1 if len(subset) > 1 else 0
        if not self._agrees(predicted, exact):
            greedy, greedy_gain, used = self._greedy_checked(
                state, f0, scored, [{n} for n in nodes], [scored[n].gain for n in nodes], meter
            )
            checks += used
            if greedy_gain > exact:
                subset, exact = greedy, greedy_gain
        if exact < scored[best_single].gain:
            return {best_single}, scored[best_single].gain, checks
        return subset, exact, checks
