"""What one proposal cost: tokens, calls, seconds and the model that spent them.

Agents talk to the coordinator only over HTTP, so this mirrors the fields of
``coordinator.engine.records.Usage`` without importing it: ``as_dict()`` is the wire
form the worker attaches to a proposal (``Usage.model_validate(u.as_dict())``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True)
class LLMUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    """Part of ``completion_tokens`` spent on hidden reasoning, where the server reports it."""
    calls: int = 0
    seconds: float = 0.0
    model: str = "heuristic"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            calls=self.calls + other.calls,
            seconds=self.seconds + other.seconds,
            model=other.model if other.calls else self.model,
        )

    def with_seconds(self, seconds: float) -> LLMUsage:
        return replace(self, seconds=seconds)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
