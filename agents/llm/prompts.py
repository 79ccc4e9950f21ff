"""The generic machinery of LLM prompts: rendering a kind's prompt, and recovering the contract from it.

The contract envelope ({block, version, budget, data}) is the only task
information the model sees. It is embedded once, as compact JSON between
``<contract>`` tags, after kind-specific instructions that explain what its
fields mean (the kind's ``Task.prompt``); the budget left is also spelled out in words, because the
budget is an input the model can plan with, not only a guardrail. The tags
let an OpenAI-compatible test server recover exactly what the model saw.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tasks.prompt import KindPrompt
from tasks.registry import UnknownKind, kind_class

Message = dict[str, str]
CONTRACT_OPEN, CONTRACT_CLOSE = "<contract>", "</contract>"
_CONTRACT_RE = re.compile(re.escape(CONTRACT_OPEN) + r"\s*(.*?)\s*" + re.escape(CONTRACT_CLOSE), re.DOTALL)

SYSTEM = (
    "You are one agent in a team that optimizes a shared solution split into blocks. "
    "You own one block for this turn. Improve it using only the contract you are given "
    "(lower objective is better). Reply with one JSON object and nothing else."
)


def round_floats(obj: Any, digits: int | None) -> Any:
    """``obj`` with every float cut to ``digits`` significant digits (fewer prompt tokens)."""
    if digits is None:
        return obj
    if isinstance(obj, float):
        return float(f"{obj:.{digits}g}") if math.isfinite(obj) else obj
    if isinstance(obj, dict):
        return {k: round_floats(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [round_floats(v, digits) for v in obj]
    return obj


def embed_contract(contract: Mapping[str, Any], digits: int | None) -> str:
    body = json.dumps(round_floats(dict(contract), digits), separators=(",", ":"), allow_nan=False)
    return f"{CONTRACT_OPEN}\n{body}\n{CONTRACT_CLOSE}"


def recover_contract(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The contract embedded in the first user message that has one (test servers use this)."""
    for m in messages:
        if m.get("role") != "user" or not isinstance(m.get("content"), str):
            continue
        found = _CONTRACT_RE.search(m["content"])
        if found:
            try:
                value = json.loads(found.group(1))
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def budget_line(budget: Mapping[str, Any]) -> str:
    """The budget left, in words; absent or unlimited entries are left out."""
    units = {"rounds": "rounds", "seconds": "seconds", "tokens": "tokens", "calls": "LLM calls"}
    parts = []
    for key, value in budget.items():
        if value is None or isinstance(value, dict | list):
            continue
        shown = f"{value:.1f}" if isinstance(value, float) else str(value)
        parts.append(f"{shown} {units.get(key, key)}")
    if not parts:
        return "Budget left: not limited."
    return (
        "Budget left: "
        + ", ".join(parts)
        + ". Spend reasoning in proportion: when little is left, answer directly."
    )


class PromptTemplate:
    """Renders a kind's ``KindPrompt`` as chat messages: system message, the kind's instructions, the budget
    left, the answer format and the contract as JSON; and the structured-output schema and repair message.

    Everything kind-specific comes from the kind (``Task.prompt``); this class only arranges it.
    """

    def __init__(self, kind_prompt: KindPrompt | None = None, float_digits: int | None = 8) -> None:
        self.kind_prompt = kind_prompt or KindPrompt()
        self.float_digits = float_digits
        self.strict_schema = self.kind_prompt.strict_schema

    # -- the kind's hooks ---------------------------------------------------------
    def describe(self, contract: Mapping[str, Any]) -> str:
        return self.kind_prompt.describe(contract)

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        return self.kind_prompt.value_schema(contract)

    def surrogate_gain(self, contract: Mapping[str, Any], value: Any) -> float | None:
        return self.kind_prompt.surrogate_gain(contract, value)

    def check(self, contract: Mapping[str, Any], value: Any) -> None:
        """Raise InvalidProposal when a value that ``Task.validate`` accepts still breaks this contract."""
        self.kind_prompt.check(contract, value)

    def max_prompt_tokens(self, contract: Mapping[str, Any]) -> int:
        return self.kind_prompt.max_prompt_tokens(contract)

    # -- rendering --------------------------------------------------------------
    def messages(self, contract: Mapping[str, Any]) -> list[Message]:
        block = contract["block"]
        user = "\n\n".join(
            [
                self.describe(contract),
                budget_line(contract.get("budget") or {}),
                (
                    f'Answer with exactly one JSON object: {{"block": {block}, "value": <your new value>, '
                    f'"predicted_improvement": <how much your change lowers your block\'s objective, a number>}}. '
                    'If you find no improvement, answer with "value": null.'
                ),
                f"The contract (block {block}, state version {contract.get('version', 0)}):\n"
                + embed_contract(contract, self.float_digits),
            ]
        )
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    def response_format(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        value = self.value_schema(contract)
        schema = {
            "type": "object",
            "properties": {
                "block": {"type": "integer", "enum": [int(contract["block"])]},
                "value": {"anyOf": [value, {"type": "null"}]} if value else {},
                "predicted_improvement": {"type": "number"},
            },
            "required": ["block", "value", "predicted_improvement"],
            "additionalProperties": False,
        }
        return {
            "type": "json_schema",
            "json_schema": {"name": "block_proposal", "schema": schema, "strict": self.strict_schema},
        }

    def repair(self, error: str) -> str:
        return (
            f"Your answer was rejected: {error}\n"
            "Reply again with one corrected JSON object only, in the format asked, for the same block."
        )


def template_for(kind: str, float_digits: int | None = 8) -> PromptTemplate:
    """The kind's template (``Task.prompt``), or the generic one for a kind not installed here."""
    try:
        prompt = kind_class(kind).prompt()
    except UnknownKind:
        prompt = KindPrompt()
    return PromptTemplate(prompt, float_digits)
