"""What an LLM agent is told about a job-shop contract, and the shape of its answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tasks import KindPrompt


class JobShopPrompt(KindPrompt):
    value_key = "keys"
    strict_schema = False

    def describe(self, contract: Mapping[str, Any]) -> str:
        jobs = sorted((contract.get("data") or {}).get("keys") or {}, key=int)
        return (
            "Task kind: jobshop (job-shop scheduling, minimize the makespan). data.routes[j] lists "
            "job j's operations in the order they must run, each [machine, duration]. Every operation "
            "has a key; each machine runs its operations in increasing key order, and an operation "
            "starts when its job's previous operation and its machine's previous operation have both "
            f"ended. You own jobs {', '.join(jobs)}: their keys (one per operation, in route order) "
            "are data.keys; the other jobs' keys are data.fixed (held fixed this turn). The current "
            "makespan is data.makespan. Keys that put a job's operations out of route order can create "
            "a cycle, which is penalized far above any makespan. Only operations on the longest path "
            "can shorten the makespan: move one of your operations before or after its neighbour on "
            "that path by choosing a key between the neighbours'. value is an object with the same "
            "keys as data.keys, each a list of numbers, one per operation."
        )

    def value_schema(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        keys = (contract.get("data") or {}).get("keys") or {}
        return {
            "type": "object",
            "properties": {
                j: {"type": "array", "items": {"type": "number"}, "minItems": len(ks), "maxItems": len(ks)}
                for j, ks in keys.items()
            },
            "required": sorted(keys),
            "additionalProperties": False,
        }
