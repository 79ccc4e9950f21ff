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


class NonFinite(NoJSON):
    """The only JSON in the text holds NaN, Infinity or a number too large for a float."""


class _NonFiniteNumber(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFiniteNumber(f"{name} is not allowed in JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NonFiniteNumber(f"the number {text[:40]} does not fit a float")
    return value


def _float_sized_int(text: str) -> int:
    if len(text.lstrip("-")) > 308:
        raise _NonFiniteNumber(f"the integer {text[:20]}... does not fit a float")
    return int(text)


_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_float_sized_int
)


def _decode(text: str, pos: int = 0) -> tuple[Any, int]:
    """``raw_decode`` with nesting too deep for the decoder reported as a ValueError."""
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def _decode_object(text: str) -> dict[str, Any]:
    value, end = _decode(text)
    if text[end:].strip():
        raise ValueError(f"extra data after the JSON value at character {end}")
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def extract_json(text: str) -> tuple[dict[str, Any], str]:
    """The object and how it was found (``json``, ``fence``, ``prose``); raises NoJSON."""
    stripped = text.strip()
    if not stripped:
        raise NoJSON("the reply is empty")
    first_error: str | None = None
    non_finite: str | None = None
    try:
        return _decode_object(stripped), "json"
    except _NonFiniteNumber as exc:
        first_error = non_finite = str(exc)
    except ValueError as exc:
        first_error = str(exc)
    for m in _FENCE.finditer(text):
        try:
            return _decode_object(m.group(1).strip()), "fence"
        except _NonFiniteNumber as exc:
            first_error = non_finite = f"in the code block: {exc}"
        except ValueError as exc:
            first_error = f"in the code block: {exc}"
    candidates: list[dict[str, Any]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = _decode(text, pos)
        except _NonFiniteNumber as exc:
            non_finite = non_finite or str(exc)
            pos = text.find("{", pos + 1)
            continue
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict):
            candidates.append(value)
        pos = text.find("{", end)
    if candidates:
        # The largest object is the answer; smaller ones are usually nested pieces or examples.
        return max(candidates, key=lambda v: len(json.dumps(v))), "prose"
    if non_finite is not None:
        raise NonFinite(f"numbers must be finite: {non_finite}")
    raise NoJSON(f"no JSON object found ({first_error})")
