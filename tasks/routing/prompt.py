"""What an LLM agent is told about a routing contract (``contract.py``) and the shape of its answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks.base import InvalidProposal
from tasks.prompt import KindPrompt


class RoutingPrompt(KindPrompt):
    """Multi-robot path finding: the contract of ``tasks/routing/contract.py``."""

    value_key = "paths"
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
            "t = 0, 1, ... from the robot's start to its goal (data.value_format), at most data.max_len steps; "
            "null for a robot whose current path you keep (other agents may move it meanwhile)."
        )

    def check(self, contract: Mapping[str, Any], value: Any) -> None:
        """Path k must be robot k's of data.robots (blocks are regrouped, so only the contract knows)."""
        if isinstance(value, Mapping):
            value = value.get("paths") or []
        for k, (robot, path) in enumerate(
            zip((contract.get("data") or {}).get("robots") or [], value, strict=False)
        ):
            if path and list(path[0]) != list(robot["start"]):
                raise InvalidProposal(
                    f"path {k} starts at {list(path[0])}, but data.robots[{k}] (robot {robot['id']}) starts at"
                    f" {robot['start']}: give the paths in the order of data.robots",
                    "wrong_robot",
                )

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        n = len((contract.get("data") or {}).get("robots") or [])
        cell = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
        path = {"type": "array", "items": cell, "minItems": 1}
        kept = {"type": "null"}  # the robot keeps its current path
        return {"type": "array", "items": {"anyOf": [path, kept]}, "minItems": n, "maxItems": n} if n else {}
