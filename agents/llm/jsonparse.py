"""Recover one JSON object from a model's text: plain JSON, a code fence, or JSON inside prose.

Only ``json`` decodes the text (no eval, no YAML, no Python literals), so
nothing the model writes is ever executed. NaN and Infinity are refused:
they are not JSON and no block value may contain them.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


class NoJSON(ValueError):
    """The text holds no decodable JSON object; the message says what was wrong."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _decode_object(text: str) -> dict[str, Any]:
    value = _DECODER.decode(text)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def extract_json(text: str) -> tuple[dict[str, Any], str]:
    """The object and how it was found (``json``, ``fence``, ``prose``); raises NoJSON."""
    stripped = text.strip()
    if not stripped:
        raise NoJSON("the reply is empty")
    first_error: str | None = None
    try:
        return _decode_object(stripped), "json"
    except ValueError as exc:
        first_error = str(exc)
    for m in _FENCE.finditer(text):
        try:
            return _decode_object(m.group(1).strip()), "fence"
        except ValueError as exc:
            first_error = f"in the code block: {exc}"
    candidates: list[dict[str, Any]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            candidates.append(value)
        pos = text.find("{", end)
    if candidates:
        # The largest object is the answer; smaller ones are usually nested pieces or examples.
        return max(candidates, key=lambda v: len(json.dumps(v))), "prose"
    raise NoJSON(f"no JSON object found ({first_error})")
