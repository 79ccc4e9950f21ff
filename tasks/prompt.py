"""What an LLM agent is told about a kind: its instructions and the shape of its value.

A kind sets ``Task.prompt`` to a subclass of ``KindPrompt``; the agents' renderer
(``agents.llm.prompts``) wraps it with the generic parts (system message, budget
line, answer format, the contract as JSON, repair message). Kept here, not in
``agents/``, so a kind owns everything about itself and ``tasks`` depends on
nothing of ours.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar


class KindPrompt:
    """The generic prompt: describes any contract as "its data, in the shape of ``data[value_key]``".

    Subclasses explain their data (``describe``), constrain the value's shape
    (``value_schema``) and, where the contract defines the surrogate exactly,
    compute the predicted improvement (``surrogate_gain``).
    """

    value_key: ClassVar[str] = "value"
    """The key of the contract's data that holds the block's current value (the answer has its shape)."""
    strict_schema: ClassVar[bool] = False
    """Whether ``value_schema`` is complete enough for strict structured output."""
    fixed_tokens: ClassVar[int] = 1000
    """Prompt tokens besides the contract's JSON the instructions may take (``max_prompt_tokens``)."""

    def describe(self, contract: Mapping[str, Any]) -> str:
        data = contract.get("data") or {}
        key = self.value_key if isinstance(data, Mapping) and self.value_key in data else None
        shape = f"the same JSON structure as data.{key}" if key else "the JSON structure the data implies"
        kind = data.get("kind", "unknown") if isinstance(data, Mapping) else "unknown"
        return (
            f"Task kind: {kind}. The contract's data is everything known about your block: its current "
            f"value, its local objective and the correction data describing how it couples to the other "
            f"blocks (held fixed this turn). Propose a better value for your block, in {shape}."
        )

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        """JSON schema of the value (``{}``: any JSON)."""
        return {}

    def surrogate_gain(self, contract: Mapping[str, Any], value: Any) -> float | None:
        """The block's surrogate decrease for ``value`` when the contract defines it exactly, else None."""
        return None

    def check(self, contract: Mapping[str, Any], value: Any) -> None:
        """Raise ``InvalidProposal`` when a value ``Task.validate`` accepts still breaks this contract."""

    def max_prompt_tokens(self, contract: Mapping[str, Any]) -> int:
        """An upper estimate of the rendered prompt's tokens: the instructions plus one token per character of
        the contract's JSON (the o200k pre-tokenizer never splits finer than that)."""
        return self.fixed_tokens + len(json.dumps(dict(contract), separators=(",", ":")))
