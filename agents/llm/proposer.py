"""The ``llm`` proposer: contract → prompt → chat completion → JSON → the task's validator.

Parse and validate failures get one repair turn that quotes the error; after
that the lease is given up (``propose`` returns None) and the reason is kept
in ``last_outcome`` and the ``failures`` counter. Transport failures (timeouts,
429/5xx after retries) give up at once: the client already retried them.
``propose`` never raises, so a worker survives any model or server behaviour.
The model's text is only ever decoded as JSON and handed to ``task.validate``.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.llm.client import ChatClient, ChatResult, LLMError, Message
from agents.llm.jsonparse import NoJSON, NonFinite, extract_json
from agents.llm.prompts import PromptTemplate
from agents.llm.settings import LLMSettings
from agents.llm.tokens import estimate_chat_tokens
from agents.llm.usage import LLMUsage
from tasks.base import Draft, InvalidProposal, Proposer, Task

MIN_COMPLETION_TOKENS = 64
"""Below this many tokens of budget left, a call cannot produce an answer: do not make it."""

OutcomeStatus = Literal["draft", "declined", "failed"]
REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i cannot|i won'?t|i'?m unable|i am unable|"
    r"i'?m not able|as an ai)",
    re.IGNORECASE,
)
"""How a refusal in plain text starts (checked only when the reply holds no JSON)."""
VALIDATOR_CRASHES = (
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    OverflowError,
    RecursionError,
)
"""What a kind's validator may raise on a value of a shape it never expected: the value is wrongly shaped."""


@dataclass(frozen=True)
class Outcome:
    """What happened on one lease: for logs, trajectories and tests."""

    status: OutcomeStatus
    block: int
    turns: int = 0
    failure: str | None = None
    """Machine-readable kind of the final failure (``timeout``, ``malformed_json``, ``wrong_block``...)."""
    reason: str | None = None
    repair_asked: tuple[str, ...] = ()
    """Kinds of the errors a repair turn was asked for (fixed when ``status`` is not ``failed``)."""
    prompt_tokens_estimate: int = 0
    prompt_chars: int = 0
    response_chars: int = 0
    json_from: str | None = None
    """How the answer's JSON was found: ``json``, ``fence`` or ``prose``."""
    usage: LLMUsage = field(default_factory=LLMUsage)
    usage_anomalies: tuple[str, ...] = ()
    """Usage figures the server reported and we replaced by our estimate (negative, absurd, not numbers)."""


class _Bad(Exception):
    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass
class _Turns:
    """Mutable bookkeeping of one ``propose`` call."""

    block: int
    spent: LLMUsage
    turns: int = 0
    repair_asked: list[str] = field(default_factory=list)
    prompt_tokens_estimate: int = 0
    prompt_chars: int = 0
    response_chars: int = 0
    json_from: str | None = None
    usage_anomalies: list[str] = field(default_factory=list)


class LLMProposer(Proposer):
    """Proposes block values by asking an OpenAI-compatible chat model.

    ``task`` is built from the task's kind and params (the lease/registration
    gives both); it supplies the validator and the wire encoding. After each
    ``propose``: ``last_usage`` (all calls of that lease, repairs included),
    ``last_outcome``; over the proposer's life: ``total_usage``, ``failures``
    (given-up leases by kind), ``repairs`` (errors fixed by a repair turn).
    """

    def __init__(
        self,
        task: Task[Any],
        settings: LLMSettings,
        *,
        client: ChatClient | None = None,
        template: PromptTemplate | None = None,
    ) -> None:
        self.task = task
        self.settings = settings
        self.client = client or ChatClient(settings)
        self.template = template or PromptTemplate(task.prompt())
        self.structured = settings.structured_output
        self.last_usage = LLMUsage(model=settings.model)
        self.total_usage = LLMUsage(model=settings.model)
        self.last_outcome: Outcome | None = None
        self.failures: Counter[str] = Counter()
        self.repairs: Counter[str] = Counter()
        self.declined = 0
        self.usage_anomalies = 0
        """Calls whose reported usage was implausible (replaced by the estimate, flagged in the outcome)."""

    def close(self) -> None:
        self.client.close()

    # -- Proposer -----------------------------------------------------------------
    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        started = time.monotonic()
        try:
            block = int(contract["block"])
        except (KeyError, TypeError, ValueError):
            block = -1
        t = _Turns(block=block, spent=LLMUsage(model=self.settings.model))
        try:
            found = self._propose(contract, t)
        except _Bad as bad:
            found = self._give_up(t, bad.kind, bad.reason)
        except Exception as exc:  # noqa: BLE001 - whatever happens, the worker keeps running
            found = self._give_up(t, "internal_error", f"{type(exc).__name__}: {exc}")
        spent = t.spent.with_seconds(time.monotonic() - started)
        self.usage_anomalies += len(t.usage_anomalies)
        self.last_usage = spent
        self.total_usage = self.total_usage + spent
        status: OutcomeStatus
        if isinstance(found, Outcome):
            self.last_outcome = _with_usage(found, spent, tuple(t.usage_anomalies))
            return None
        if found is None:
            self.declined += 1
            status = "declined"
        else:
            status = "draft"
        self.repairs.update(t.repair_asked)
        self.last_outcome = Outcome(
            status=status,
            block=block,
            turns=t.turns,
            repair_asked=tuple(t.repair_asked),
            prompt_tokens_estimate=t.prompt_tokens_estimate,
            prompt_chars=t.prompt_chars,
            response_chars=t.response_chars,
            json_from=t.json_from,
            usage=spent,
            usage_anomalies=tuple(t.usage_anomalies),
        )
        if found is None:
            return None
        value, predicted, source = found
        return Draft(
            block=block,
            value=value,
            predicted_improvement=predicted,
            info={
                "usage": spent.as_dict(),
                "turns": t.turns,
                "repaired": list(t.repair_asked),
                "json_from": t.json_from,
                "predicted_from": source,
                "prompt_chars": t.prompt_chars,
                "response_chars": t.response_chars,
                "usage_anomalies": list(t.usage_anomalies),
            },
        )

    # -- the turns ------------------------------------------------------------------
    def _propose(self, contract: Mapping[str, Any], t: _Turns) -> tuple[Any, float, str] | Outcome | None:
        if t.block < 0:
            raise _Bad("bad_contract", "the contract has no integer block")
        messages = self.template.messages(contract)
        t.prompt_tokens_estimate = estimate_chat_tokens(messages)
        t.prompt_chars = sum(len(m["content"]) for m in messages)
        budget = contract.get("budget") or {}
        calls_left = _number(budget.get("calls"))
        turns_allowed = 1 + self.settings.repair_turns
        if calls_left is not None:
            turns_allowed = min(turns_allowed, int(calls_left))
        if turns_allowed < 1:
            return self._give_up(t, "budget_exhausted", "no LLM calls left in the budget")
        for turn in range(turns_allowed):
            max_tokens = self._max_tokens(budget, messages, t.spent)
            if max_tokens is None:
                return self._give_up(t, "budget_exhausted", "too few tokens left in the budget for an answer")
            result = self._call(messages, contract, max_tokens, t)
            if isinstance(result, Outcome):
                return result
            try:
                return self._interpret(result, contract, t)
            except _Bad as bad:
                if turn + 1 >= turns_allowed:
                    raise
                t.repair_asked.append(bad.kind)
                messages = [
                    *messages,
                    {"role": "assistant", "content": result.text},
                    {"role": "user", "content": self.template.repair(bad.reason)},
                ]
        raise AssertionError("unreachable")  # pragma: no cover

    def _max_tokens(self, budget: Mapping[str, Any], messages: list[Message], spent: LLMUsage) -> int | None:
        tokens_left = _number(budget.get("tokens"))
        if tokens_left is None:
            return self.settings.max_tokens
        room = int(tokens_left) - spent.tokens - estimate_chat_tokens(messages)
        if room < MIN_COMPLETION_TOKENS:
            return None
        return min(self.settings.max_tokens, room)

    def _call(
        self, messages: list[Message], contract: Mapping[str, Any], max_tokens: int, t: _Turns
    ) -> ChatResult | Outcome:
        t.turns += 1
        fmt = self.template.response_format(contract) if self.structured else None
        try:
            result = self.client.complete(messages, response_format=fmt, max_tokens=max_tokens)
        except LLMError as exc:
            t.spent = t.spent + exc.usage
            if fmt is not None and exc.kind == "http_error" and exc.status in (400, 422):
                # The server does not support json_schema output: fall back to plain text from now on.
                self.structured = False
                return self._call(messages, contract, max_tokens, t)
            return self._give_up(t, exc.kind, str(exc))
        t.spent = t.spent + result.usage
        t.response_chars += len(result.text)
        if result.usage_anomaly is not None:
            t.usage_anomalies.append(result.usage_anomaly)
        return result

    def _interpret(
        self, result: ChatResult, contract: Mapping[str, Any], t: _Turns
    ) -> tuple[Any, float, str] | None:
        try:
            obj, how = extract_json(result.text)
        except NonFinite as exc:
            raise _Bad("non_finite", f"{exc}; write every number as a finite JSON number") from None
        except NoJSON as exc:
            if result.finish_reason == "length":
                raise _Bad(
                    "truncated",
                    "your answer was cut off at the token limit before the JSON object "
                    "was complete; reply with the JSON object only, no explanation",
                ) from None
            if REFUSAL.match(result.text):
                raise _Bad(
                    "refusal",
                    "you declined to answer; reply with the JSON object for your block "
                    '(its "value" may be null to propose nothing)',
                ) from None
            raise _Bad("malformed_json", f"could not read a JSON object from your reply: {exc}") from None
        t.json_from = how
        if "value" not in obj:
            raise _Bad("bad_shape", 'the JSON object has no "value" field')
        claimed = obj.get("block")
        if not isinstance(claimed, int) or isinstance(claimed, bool) or claimed != t.block:
            raise _Bad("wrong_block", f"the answer is for block {claimed!r}, but your block is {t.block}")
        if obj["value"] is None:
            return None
        try:
            decoded = self.task.validate(t.block, obj["value"])
            self.template.check(contract, obj["value"])
        except InvalidProposal as exc:
            raise _Bad(exc.code, exc.reason) from None
        except VALIDATOR_CRASHES as exc:
            raise _Bad(
                "wrong_shape", f'"value" does not have the shape your block needs ({type(exc).__name__})'
            ) from None
        value = self.task.encode_value(decoded)
        try:
            gain = self.template.surrogate_gain(contract, decoded)
        except VALIDATOR_CRASHES:
            gain = None
        if gain is not None and math.isfinite(gain):
            return value, gain, "surrogate"
        said = _number(obj.get("predicted_improvement"))
        return value, (said if said is not None else 0.0), "model" if said is not None else "missing"

    def _give_up(self, t: _Turns, kind: str, reason: str) -> Outcome:
        self.failures[kind] += 1
        return Outcome(
            status="failed",
            block=t.block,
            turns=t.turns,
            failure=kind,
            reason=reason,
            repair_asked=tuple(t.repair_asked),
            prompt_tokens_estimate=t.prompt_tokens_estimate,
            prompt_chars=t.prompt_chars,
            response_chars=t.response_chars,
            json_from=t.json_from,
        )

    def counters(self) -> dict[str, Any]:
        """Failure and repair counts, for logs and metrics."""
        return {
            "failures": dict(self.failures),
            "repairs": dict(self.repairs),
            "declined": self.declined,
            "usage_anomalies": self.usage_anomalies,
            "usage": self.total_usage.as_dict(),
        }


def _with_usage(outcome: Outcome, usage: LLMUsage, anomalies: tuple[str, ...] = ()) -> Outcome:
    return Outcome(**{**outcome.__dict__, "usage": usage, "usage_anomalies": anomalies})


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)
