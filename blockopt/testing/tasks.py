"""The Task contract: every task kind passes these, on a real instance (built-in kinds and plugins alike).

``tests/tasks/test_task_contract.py`` runs them over every installed kind, on the instance
its ``Task.example`` describes. A plugin author can also run them from the plugin's
own tests, blockopt installed from its wheel (``tests/project/test_wheel.py``): subclass ``TaskContract``
and define a ``kit`` fixture in the module::

    from blockopt.testing import Kit, TaskContract, kit_for

    @pytest.fixture(scope="module")
    def kit() -> Kit:
        return kit_for("mykind", {"size": 5})   # or Kit.build(MyTask(MyParams(...)), knobs)

    class TestMyKind(TaskContract):
        pass

The suite checks, on the initial state and on a state the kind's own heuristic
reached: incremental scoring equals full scoring; disjoint footprints mean zero
interaction; ``apply`` never mutates its input; the state survives JSON; garbage
proposals (any JSON, numbers out of a float's range) are refused with a declared
reason, never a crash; the heuristic's drafts
validate; a value a block's lease admits writes nothing of another block, also after
the kind re-forms its blocks (``Ownership.block_elements`` and ``Ownership.written_elements``);
the LLM prompt renders within the kind's own token estimate; every rejection code in
the kind's source is declared; ``reference()`` gives the same answer twice, on fresh instances.
"""

from __future__ import annotations

import ast
import copy
import inspect
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agents.llm.prompts import PromptTemplate, recover_contract
from agents.llm.tokens import estimate_chat_tokens
from tasks import COMMON_REJECTION_CODES, Draft, InvalidProposal, Task, capabilities, create_task, kind_class
from tasks.capabilities import EVERYTHING

GARBAGE: list[Any] = [
    None,
    0,
    -1,
    1e308,
    "",
    "x" * 1000,
    True,
    [],
    {},
    [None],
    [[[]]],
    {"": None},
    {"value": []},
    [float("inf")],
    {"0": "zero"},
    [[0, 0]] * 3,
    {"plans": 5},
    {"x": [1, 2]},
    list(range(64)),
]
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=6), inner, max_size=6),
    max_leaves=30,
)


@dataclass
class Kit:
    """A real instance, its heuristic's drafts and the states the suite checks on."""

    task: Task[Any]
    knobs: BaseModel
    states: list[Any] = field(default_factory=list)
    drafts: list[list[Draft]] = field(default_factory=list)
    """drafts[i]: the heuristic's draft for each block that found one, on states[i]."""

    @classmethod
    def build(cls, task: Task[Any], knobs: BaseModel, seed: int = 1) -> Kit:
        """Drafts on the initial state, then on the state reached by applying the first round's best draft."""
        kit = cls(task, knobs)
        state = task.initial_state()
        for step in range(2):
            proposer = task.make_proposer(knobs, seed=seed + step)
            drafts = []
            for block in task.blocks():
                draft = proposer.propose(
                    {"block": block, "version": step, "budget": {}, "data": task.contract(state, block)}
                )
                if draft is not None:
                    drafts.append(draft)
            kit.states.append(state)
            kit.drafts.append(drafts)
            if drafts:
                best = max(drafts, key=lambda d: d.predicted_improvement)
                state = task.apply(state, {best.block: task.validate(best.block, best.value)})
        return kit

    def cases(self) -> list[tuple[Any, list[Draft]]]:
        return list(zip(self.states, self.drafts, strict=True))


def kit_for(kind: str, example: dict[str, Any] | None = None) -> Kit:
    """The kit of an installed kind on ``example`` (default: the kind's own ``Task.example``)."""
    cls = kind_class(kind)
    values = dict(cls.example if example is None else example)
    task = create_task(kind, {k: v for k, v in values.items() if k in cls.Params.model_fields})
    knobs = cls.ProposerParams.model_validate(
        {k: v for k, v in values.items() if k in cls.ProposerParams.model_fields}
    )
    return Kit.build(task, knobs)


def declared_codes(cls: type[Task[Any]]) -> frozenset[str]:
    return COMMON_REJECTION_CODES | cls.rejection_codes


def raised_codes(cls: type[Task[Any]]) -> set[str]:
    """Codes in ``InvalidProposal(reason, code)`` calls in the kind's module and, when the kind is a
    package of its own (``tasks/routing/``, ``blockopt_jobshop/``), of every module of that package."""
    source = Path(inspect.getfile(cls))
    own_package = "." in cls.__module__ and cls.__module__.rsplit(".", 1)[0] not in ("tasks", "tests")
    files = sorted(source.parent.rglob("*.py")) if own_package else [source]
    found: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "InvalidProposal"
            ):
                continue
            for arg in [*node.args[1:], *(k.value for k in node.keywords if k.arg == "code")]:
                found |= _string_outcomes(arg)
    return found


def _string_outcomes(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _string_outcomes(node.body) | _string_outcomes(node.orelse)
    return set()


def _close(a: float, b: float, scale: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9 * scale)


class TaskContract:
    """Every kind's obligations; the test module provides a ``kit`` fixture (module scope: drafts cost)."""

    def test_the_heuristic_finds_something(self, kit: Kit) -> None:
        """Otherwise every other check would run on the initial state only."""
        assert any(kit.drafts), f"{kit.task.kind}: the heuristic found no improvement on any block"

    def test_drafts_validate_and_round_trip_the_wire(self, kit: Kit) -> None:
        for _, drafts in kit.cases():
            for d in drafts:
                value = kit.task.validate(d.block, d.value)
                again = kit.task.validate(d.block, json.loads(json.dumps(kit.task.encode_value(value))))
                assert json.dumps(kit.task.encode_value(again)) == json.dumps(kit.task.encode_value(value))

    def test_current_values_validate(self, kit: Kit) -> None:
        for state in kit.states:
            for b in kit.task.blocks():
                wire = json.loads(json.dumps(kit.task.encode_value(kit.task.block_value(state, b))))
                kit.task.validate(b, wire)

    def test_blocks_hold_disjoint_elements_and_drafts_write_their_own(self, kit: Kit) -> None:
        """No element belongs to two blocks, and the coordinator's ownership check admits the heuristic's own
        drafts (otherwise every proposal would be refused as ``outside_lease``)."""
        t = kit.task
        for state, drafts in kit.cases():
            held = [capabilities.block_elements(t, state, b) for b in t.blocks()]
            for (a, x), (b, y) in itertools.combinations(enumerate(held), 2):
                assert x.isdisjoint(y), (
                    f"{t.kind}: blocks {a} and {b} both hold {sorted(map(str, x & y))[:5]}"
                )
            for d in drafts:
                outside = (
                    capabilities.written_elements(t, state, d.block, t.validate(d.block, d.value))
                    - held[d.block]
                )
                assert not outside, (
                    f"{t.kind}: block {d.block}'s own draft writes {sorted(map(str, outside))[:5]}"
                )

    def test_a_foreign_write_is_reported_or_refused(self, kit: Kit) -> None:
        """A value the lease admits writes nothing of another block.

        Every draft is offered as every block's value, on the state it was made on and on that state with its
        blocks re-formed (``regroup``, ``form_blocks``): there a value names elements another block holds,
        where a kind's value can name them. Each must be refused by ``validate``, or reported by
        ``written_elements`` outside ``block_elements`` (the coordinator then refuses it as
        ``outside_lease``), or refused when scored; else, applied, it must leave every other block's value as
        it was (a positional kind writes it onto the block's own elements).
        """
        t = kit.task
        for state, drafts in self._with_reformed_blocks(kit):
            for d, b in itertools.product(drafts, t.blocks()):
                try:
                    value = t.validate(b, d.value)
                except InvalidProposal:
                    continue
                if capabilities.written_elements(t, state, b, value) - capabilities.block_elements(
                    t, state, b
                ):
                    continue
                others = {c: _wire(t, state, c) for c in t.blocks() if c != b}
                try:
                    capabilities.evaluate_change(t, state, {b: value})
                    after = t.apply(state, {b: value})
                except InvalidProposal:
                    continue
                changed = [c for c, wire in others.items() if _wire(t, after, c) != wire]
                assert not changed, (
                    f"{t.kind}: block {d.block}'s draft, admitted as block {b}'s value (written_elements says"
                    f" it writes only block {b}'s elements), changed block(s) {changed}: written_elements"
                    " must name every element a value changes, read from the state (blocks can be re-formed)"
                )

    @staticmethod
    def _with_reformed_blocks(kit: Kit) -> list[tuple[Any, list[Draft]]]:
        """The kit's cases, and each state with its blocks re-formed by every generator the kind has (its
        drafts stay those of the state before: they now name elements that may belong to other blocks)."""
        t, cases = kit.task, kit.cases()
        for state, drafts in kit.cases():
            for generator in capabilities.neighbourhoods(
                t,
            )[1:]:
                reformed = capabilities.form_blocks(t, state, generator, 1.0, 1)
                if reformed is not None:
                    cases.append((reformed, drafts))
        return cases

    def test_incremental_scoring_equals_full_scoring(self, kit: Kit) -> None:
        t, scale = kit.task, kit.task.scale()
        for state, drafts in kit.cases():
            changes = {d.block: t.validate(d.block, d.value) for d in drafts}
            subsets = [dict([c]) for c in changes.items()] + ([changes] if len(changes) > 1 else [])
            for sub in subsets:
                full = t.objective(t.apply(state, sub))
                assert _close(capabilities.evaluate_change(t, state, sub), full, scale), (t.kind, sorted(sub))

    def test_disjoint_footprints_mean_zero_interaction(self, kit: Kit) -> None:
        """Checked on every pair of drafts whose footprints are disjoint, so the example must have such a
        pair; a kind whose every footprint is ``EVERYTHING`` (the default) has none to check, soundly."""
        t, scale, checked, everything = kit.task, kit.task.scale(), 0, True
        for state, drafts in kit.cases():
            items = [(d.block, t.validate(d.block, d.value)) for d in drafts]
            prints = [capabilities.footprint(t, state, b, v) for b, v in items]
            everything = everything and all(p == EVERYTHING for p in prints)
            for (i, p), (j, q) in itertools.combinations(enumerate(items), 2):
                if prints[i].isdisjoint(prints[j]):
                    checked += 1
                    assert _close(capabilities.interaction(t, state, p, q), 0.0, scale), (t.kind, p[0], q[0])
        assert checked or everything, (
            f"{t.kind}: no two of the heuristic's drafts have disjoint footprints on this instance, so "
            f"disjoint footprints meaning zero interaction goes unchecked: give {type(t).__name__}.example "
            "a sparser instance (more blocks, fewer couplings between them) on which two blocks' drafts "
            "touch nothing in common"
        )

    def test_apply_never_mutates(self, kit: Kit) -> None:
        t = kit.task
        for state, drafts in kit.cases():
            before, f0, snapshot = (
                json.dumps(capabilities.dump_state(t, state)),
                t.objective(state),
                copy.deepcopy(state),
            )
            t.apply(state, {d.block: t.validate(d.block, d.value) for d in drafts})
            for d in drafts:
                capabilities.evaluate_change(t, state, {d.block: t.validate(d.block, d.value)})
            assert json.dumps(capabilities.dump_state(t, state)) == before
            assert t.objective(state) == f0
            assert json.dumps(capabilities.dump_state(t, snapshot)) == before

    def test_state_json_round_trips(self, kit: Kit) -> None:
        t = kit.task
        for state in kit.states:
            wire = json.dumps(capabilities.dump_state(t, state), allow_nan=False)
            back = capabilities.load_state(t, json.loads(wire))
            assert json.dumps(capabilities.dump_state(t, back), allow_nan=False) == wire
            assert _close(t.objective(back), t.objective(state), t.scale())

    def test_garbage_is_refused_with_a_declared_reason(self, kit: Kit) -> None:
        t, codes = kit.task, declared_codes(type(kit.task))
        for value in GARBAGE:
            for block in (0, t.n_blocks - 1):
                _refused_or_valid(t, block, value, codes)
        for block in (-1, t.n_blocks, 10**9):
            with pytest.raises(InvalidProposal) as err:
                t.validate(block, kit.task.encode_value(kit.task.block_value(kit.states[0], 0)))
            assert err.value.code in codes and err.value.reason

    def test_any_json_is_refused_or_valid_never_a_crash(self, kit: Kit) -> None:
        """Hypothesis runs inside the test: ``@given`` on this shared method would be one test called from
        every subclass (a kind's own suite, this project's), which hypothesis fails as ``differing_executors``
        whenever two of them run in one session."""
        codes = declared_codes(type(kit.task))

        @settings(max_examples=60, deadline=None)
        @given(value=JSON_VALUES)
        def refused_or_valid(value: Any) -> None:
            _refused_or_valid(kit.task, 0, value, codes)

        refused_or_valid()

    def test_out_of_range_numbers_are_refused_never_a_crash(self, kit: Kit) -> None:
        """Every number of a block's current wire value replaced by one JSON can carry but a float cannot
        (a 400-digit integer; Infinity and NaN, which Python's JSON parser accepts): refused or valid."""
        t, codes = kit.task, declared_codes(type(kit.task))
        for b in (0, t.n_blocks - 1):
            wire = json.loads(json.dumps(t.encode_value(t.block_value(kit.states[0], b))))
            for number in (10**400, -(10**400), math.inf, math.nan):
                _refused_or_valid(t, b, _numbers_replaced(wire, number), codes)

    def test_reference_is_reproducible(self, kit: Kit) -> None:
        """Two fresh instances of the task give the same reference, provenance included: one that depends on
        the machine (a solver's worker count, its seed) ends one run ``optimal`` and the next ``stalled``."""
        t = kit.task
        first, second = (type(t)(t.params).reference() for _ in range(2))
        assert first == second, (
            f"{t.kind}: reference() gave {first}, then {second}; fix the solver's workers and seed "
            "(CP-SAT: num_workers, random_seed) and say so in the Reference"
        )

    def test_rejection_codes_in_the_source_are_declared(self, kit: Kit) -> None:
        cls = type(kit.task)
        undeclared = raised_codes(cls) - declared_codes(cls)
        assert not undeclared, f"{cls.kind}: add {sorted(undeclared)} to {cls.__name__}.rejection_codes"

    def test_prompt_renders_within_its_token_estimate(self, kit: Kit) -> None:
        t = kit.task
        template = PromptTemplate(t.prompt(), float_digits=8)
        for state in kit.states:
            for b in t.blocks():
                contract = {"block": b, "version": 1, "budget": {"rounds": 5}, "data": t.contract(state, b)}
                messages = template.messages(contract)
                assert recover_contract(PromptTemplate(t.prompt(), None).messages(contract)) == json.loads(
                    json.dumps(contract)
                )
                json.dumps(template.response_format(contract))
                tokens = estimate_chat_tokens(messages)
                assert tokens <= template.max_prompt_tokens(contract), (t.kind, b, tokens)


def _numbers_replaced(wire: Any, number: float) -> Any:
    if isinstance(wire, bool):
        return wire
    if isinstance(wire, int | float):
        return number
    if isinstance(wire, list):
        return [_numbers_replaced(v, number) for v in wire]
    if isinstance(wire, dict):
        return {k: _numbers_replaced(v, number) for k, v in wire.items()}
    return wire


def _wire(task: Task[Any], state: Any, block: int) -> str:
    return json.dumps(task.encode_value(task.block_value(state, block)), sort_keys=True)


def _refused_or_valid(task: Task[Any], block: int, value: Any, codes: frozenset[str]) -> None:
    """A value either validates (and then scores) or is refused with a declared code and a reason."""
    try:
        decoded = task.validate(block, value)
    except InvalidProposal as exc:
        assert exc.code in codes, f"{task.kind}: code {exc.code!r} not declared in rejection_codes"
        assert exc.reason.strip()
        return
    try:  # a kind may still refuse while scoring (sqlplan: rows that differ from the query's)
        score = capabilities.evaluate_change(task, task.initial_state(), {block: decoded})
    except InvalidProposal as exc:
        assert exc.code in codes, f"{task.kind}: code {exc.code!r} not declared in rejection_codes"
        return
    assert isinstance(score, float | int) and not math.isnan(score), (task.kind, value, score)
