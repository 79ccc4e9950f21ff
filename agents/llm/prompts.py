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
from collections.abc import Mapping
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


def recover_contract(messages: list[Mapping[str, Any]]) -> dict[str, Any] | None:
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
    return "Budget left: " + ", ".join(parts) + ". Spend reasoning in proportion: when little is left, answer directly."


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
        user = "\n\n".join([
            self.describe(contract),
            budget_line(contract.get("budget") or {}),
            (
                f'Answer with exactly one JSON object: {{"block": {block}, "value": <your new value>, '
                f'"predicted_improvement": <how much your change lowers your block\'s objective, a number>}}. '
                'If you find no improvement, answer with "value": null.'
            ),
            f"The contract (block {block}, state version {contract.get('version', 0)}):\n"
            + embed_contract(contract, self.float_digits),
        ])
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


class QuadraticTemplate(PromptTemplate):
    kind = "quadratic"
    strict_schema = True

    def describe(self, contract: Mapping[str, Any]) -> str:
        d = contract["data"]["dim"]
        return (
            "Task kind: quadratic. Your block is a vector of "
            f"{d} real numbers. Choose y to minimize your surrogate "
            "s(y) = 0.5*y'Ay - b'y + y'c, where A = data.local_objective.A "
            f"({d}x{d}, symmetric positive definite), b = data.local_objective.b and "
            "c = data.correction (how the other blocks, held fixed, pull on yours). "
            "Your current value is data.x. The exact minimizer solves A y = b - c. "
            f"value must be a list of {d} finite numbers; predicted_improvement is s(x) - s(y)."
        )

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        d = int(contract["data"]["dim"])
        return {"type": "array", "items": {"type": "number"}, "minItems": d, "maxItems": d}

    def surrogate_gain(self, contract: Mapping[str, Any], value: Any) -> float | None:
        data = contract["data"]
        a = np.asarray(data["local_objective"]["A"], dtype=float)
        b = np.asarray(data["local_objective"]["b"], dtype=float)
        c = np.asarray(data["correction"], dtype=float)
        x = np.asarray(data["x"], dtype=float)
        y = np.asarray(value, dtype=float)

        def s(v: np.ndarray) -> float:
            return float(0.5 * v @ a @ v - b @ v + v @ c)

        return s(x) - s(y)


class RoutingTemplate(PromptTemplate):
    """Multi-robot path finding: the contract of ``tasks/routing/contract.py``."""

    kind = "routing"
    strict_schema = True

    def describe(self, contract: Mapping[str, Any]) -> str:
        data = contract.get("data") or {}
        n = len(data.get("robots") or [])
        return (
            "Task kind: routing (multi-robot path finding). The map is a grid of data.width x data.height "
            "cells, 4-connected, with discrete time; at each step a robot waits or moves to one of the four "
            "neighbouring cells, never into an obstacle or off the map. Cells are [x, y]. data.obstacles lists "
            "every blocked cell inside data.region = [x0, y0, x1, y1]; keep your paths inside that region, "
            "where you know the map. Your block is the "
            f"{n} robots in data.robots (each with its start, goal and current path). Cost = the sum of "
            "arrival times (a robot stays on its goal after arriving) + data.conflict_weight per conflict: "
            "two robots in one cell at one time (vertex) or swapping cells in one step (edge), among your "
            "robots or with the other robots' moves in data.reservations (fixed this turn; "
            "data.reservations.format says how to read them; they cover data.region during data.window). "
            "Remove conflicts first, then shorten paths; the current paths avoid obstacles, so stay close "
            "to them when unsure. "
            f"value is a list of {n} paths in the order of data.robots, each a list of [x, y] cells at "
            "t = 0, 1, ... from the robot's start to its goal (data.value_format), at most data.max_len steps."
        )

    def check(self, contract: Mapping[str, Any], value: Any) -> None:
        """Path k must be robot k's of data.robots (blocks are regrouped, so only the contract knows)."""
        if isinstance(value, Mapping):
            value = value.get("paths") or []
        for k, (robot, path) in enumerate(zip((contract.get("data") or {}).get("robots") or [], value, strict=False)):
            if path and list(path[0]) != list(robot["start"]):
                raise InvalidProposal(
                    f"path {k} starts at {list(path[0])}, but data.robots[{k}] (robot {robot['id']}) starts at"
                    f" {robot['start']}: give the paths in the order of data.robots", "wrong_robot",
                )

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        n = len((contract.get("data") or {}).get("robots") or [])
        cell = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
        path = {"type": "array", "items": cell, "minItems": 1}
        return {"type": "array", "items": path, "minItems": n, "maxItems": n} if n else {}


class SqlPlanTemplate(PromptTemplate):
    """SQLite query planning: the contract of ``tasks/sqlplan/task.py``."""

    kind = "sqlplan"

    def describe(self, contract: Mapping[str, Any]) -> str:
        return (
            "Task kind: sqlplan (SQLite query planning). Your block is the queries in data.queries, each "
            "with its SQL, its FROM scopes, its current plan and cost. A plan is {\"orders\": {scope: [tables "
            "in join order]}, \"hints\": [{\"scope\", \"table\", \"index\": index spec or null}]}: the join "
            "order is rendered with CROSS JOIN, which SQLite keeps in order, and a hint forces (or, with "
            "null, forbids) an index for one table. You may also add or drop indexes of the shared set "
            "(data.indexes); an index spec is {\"table\", \"columns\": [names], \"unique\": false}. "
            "Cost = SQLite VM steps to run your queries (data.cost_unit) plus a penalty beyond the index "
            "budget (data.budget_left_bytes; null means no limit). Other queries read the same tables "
            "(data.correction.readers): an index you add or drop changes their cost too. Every plan must "
            "return exactly the rows of the original query. Use only tables, columns and indexes named "
            "in the contract; do not write SQL. "
            "value is {\"plans\": {query id: plan, only for queries you change}, \"add\": [index specs], "
            "\"drop\": [index specs]}."
        )

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        spec = {"type": "object", "properties": {"table": {"type": "string"}, "columns": {"type": "array"},
                                                  "unique": {"type": "boolean"}}, "required": ["table", "columns"]}
        return {"type": "object", "properties": {"plans": {"type": "object"}, "add": {"type": "array", "items": spec},
                                                 "drop": {"type": "array", "items": spec}}}


def template_for(kind: str, float_digits: int | None = 8) -> PromptTemplate:
    """The kind's template (``Task.prompt``), or the generic one for a kind not installed here."""
    try:
        prompt = kind_class(kind).prompt()
    except UnknownKind:
        prompt = KindPrompt()
    return PromptTemplate(prompt, float_digits)
