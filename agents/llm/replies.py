"""Reading a chat-completions answer from a server that may be hostile or broken.

Every way an answer can be wrong has its own reason, so no bad answer reaches
the proposer's catch-all (``internal_error``): the body's shape is checked by
pydantic models (``wrong_shape``), an empty ``choices`` is ``empty_choices``,
a refusal (the ``refusal`` field or ``finish_reason: content_filter``) is
``refusal``. Usage figures that are negative, not integers or absurd are
replaced by our own estimate and flagged (``UsageCheck.anomaly``), so a
server's arithmetic can neither corrupt budgets nor make the coordinator
refuse the proposal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

ABSURD_TOKENS = 10_000_000
"""More tokens than any one call of any served model can spend: a reported figure above it is nonsense."""


class ReplyError(Exception):
    """The answer cannot be used; ``kind`` is the reason recorded for the lease."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class ReplyMessage(_Loose):
    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None


class ReplyChoice(_Loose):
    message: ReplyMessage | None = None
    delta: ReplyMessage | None = None
    finish_reason: str | None = None


class Reply(_Loose):
    choices: list[ReplyChoice] | None = None
    usage: dict[str, Any] | None = None
    model: str | None = None


def parse_reply(data: Any, *, streamed_chunk: bool = False) -> Reply:
    """The body as a ``Reply``; ReplyError(``wrong_shape``) when it is not shaped like one."""
    try:
        reply = Reply.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ReplyError(
            "wrong_shape", f"the server's answer is not a chat completion ({where}: {first['msg']})"
        ) from None
    if not streamed_chunk and not reply.choices:
        raise ReplyError("empty_choices", "the server's answer has no choices")
    return reply


def refusal_of(message: ReplyMessage | None, finish_reason: str | None) -> str | None:
    """Why the model refused, or None."""
    if message is not None and message.refusal:
        return message.refusal[:300]
    if finish_reason == "content_filter":
        return "the server's content filter stopped the answer"
    return None


@dataclass(frozen=True)
class UsageCheck:
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    anomaly: str | None = None
    """Why the reported figures were not used (None: they were)."""


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or value in (float("inf"), float("-inf")) or int(value) != value:
        return None
    return int(value)


def check_usage(reported: dict[str, Any], estimate: UsageCheck, max_tokens: int) -> UsageCheck:
    """The reported usage if it is plausible, else the estimate with the reason it was replaced."""
    details = reported.get("completion_tokens_details") or {}
    if not isinstance(details, dict):
        details = {}
    fields = {
        "prompt_tokens": reported.get("prompt_tokens"),
        "completion_tokens": reported.get("completion_tokens"),
        "reasoning_tokens": details.get("reasoning_tokens", 0),
    }
    counts = {name: _count(value if value is not None else 0) for name, value in fields.items()}
    for name, count in counts.items():
        if count is None:
            return _flagged(estimate, f"usage {name} is not a whole number: {str(fields[name])[:40]!r}")
        if count < 0:
            return _flagged(estimate, f"usage {name} is negative ({count})")
        if count > ABSURD_TOKENS:
            return _flagged(estimate, f"usage {name} is absurd ({count})")
    prompt, completion, reasoning = (
        counts["prompt_tokens"],
        counts["completion_tokens"],
        counts["reasoning_tokens"],
    )
    assert prompt is not None and completion is not None and reasoning is not None
    if completion > max(max_tokens, 1) * 4:
        return _flagged(estimate, f"usage completion_tokens {completion} exceeds the {max_tokens} asked for")
    if reasoning > completion:
        return _flagged(estimate, f"usage reasoning_tokens {reasoning} exceed completion_tokens {completion}")
    return UsageCheck(prompt, completion, reasoning)


def _flagged(estimate: UsageCheck, reason: str) -> UsageCheck:
    return UsageCheck(estimate.prompt_tokens, estimate.completion_tokens, estimate.reasoning_tokens, reason)
