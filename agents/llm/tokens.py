"""Token counts estimated without a model tokenizer.

GPT-OSS uses the o200k (harmony) BPE. Its real tokenizer needs either a
download at run time (tiktoken, openai-harmony) or a 40 MB compiled wheel
(bpe-openai), so instead we count the pieces of o200k's own pre-tokenizer:
words, runs of at most three digits, punctuation runs and whitespace. For
ordinary text and short words a piece is about one token; prompts here are
mostly JSON numbers, where the plain "4 characters per token" rule
undercounts by about 2×. Calibrated against o200k_base (see BENCHMARKS.md,
"LLM agents and the simulated LLM"): within a few percent on the built-in prompts.
"""

from __future__ import annotations

import re

# Letters (with an optional leading space/punctuation char, like o200k), digit
# groups of 1-3, runs of other symbols, newlines, other whitespace.
_PIECE = re.compile(
    r"""[^\r\n\w]?[^\W\d_]+|\d{1,3}|(?:[^\s\w]|_)+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    re.UNICODE,
)
_LONG_WORD = 8
"""Words longer than this split into about one token per this many characters."""


def estimate_tokens(text: str) -> int:
    """Approximate o200k token count of ``text`` (never below 1 for non-empty text)."""
    if not text:
        return 0
    count = 0
    for m in _PIECE.finditer(text):
        piece = m.group(0)
        if piece[-1:].isalpha() and len(piece) > _LONG_WORD:
            count += -(-len(piece) // _LONG_WORD)
        else:
            count += 1
    return max(1, count)


def estimate_chat_tokens(messages: list[dict[str, str]]) -> int:
    """Prompt tokens of a chat as the harmony template renders it.

    Each message costs its content plus about 4 framing tokens
    (``<|start|>role<|message|>…<|end|>``); the template's own system header
    (model identity, knowledge cutoff, reasoning level, channels) adds about 40.
    """
    return 40 + sum(4 + estimate_tokens(m.get("content") or "") for m in messages)
