"""How a task chooses its neighbourhoods: the ``selection`` part of a task's creation request.

Kept apart from the bookkeeping that uses it (``coordinator/engine/adaptive.py``): this is wire format, and
its schema states the rules a client must follow (the kind's own variant, ``coordinator/api/openapi.py``,
adds the generators a kind offers).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Policy = Literal["lease_order", "ucb1", "alns"]


class SelectionSettings(BaseModel):
    """How a task chooses its neighbourhoods (part of a task's creation request)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # part of a request body: "true" is not true
        json_schema_extra={
            "description": "How a task chooses its neighbourhoods. Cross-field rule: `hold` needs `policy` "
            "ucb1 or alns (422 otherwise; the `if`/`then` below says so).",
            "if": {"properties": {"hold": {"const": True}}, "required": ["hold"]},
            "then": {"properties": {"policy": {"enum": ["ucb1", "alns"]}}, "required": ["policy"]},
        },
    )

    policy: Policy = Field("lease_order", description="lease_order (no learning), ucb1 or alns")
    every_round: bool = Field(
        False,
        description="form new blocks after every round the coordinator may regroup; false: only after a "
        "round that merged nothing (when lease order regroups), the blocks that paid staying in place",
    )
    hold: bool = Field(
        False,
        description="an agent whose lease found nothing waits for the round to close (at most one round "
        "deadline) instead of searching the same block again, and after a round that merged, the blocks that "
        "did not pay are formed anew (the ones that paid stay)",
    )
    generators: list[str] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="use only these of the kind's neighbourhood generators (default, or null: all); "
        "a kind's variant of this schema lists them",
    )
    size: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        description="initial neighbourhood size (fraction of a block), clamped into [min_size, max_size]",
    )
    min_size: float = Field(0.1, gt=0.0, le=1.0, description="adapted sizes stay at or above it")
    max_size: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="adapted sizes stay at or below it; below min_size, it wins (every size is max_size)",
    )
    growth: float = Field(
        1.25, gt=1.0, le=4.0, description="size factor after a gain (its inverse after none)"
    )
    exploration: float = Field(0.5, ge=0.0, le=10.0, description="UCB1's c")
    reaction: float = Field(0.2, gt=0.0, le=1.0, description="ALNS's r")
    floor: float = Field(0.05, gt=0.0, le=1.0, description="ALNS's smallest weight")

    @model_validator(mode="after")
    def _hold(self) -> SelectionSettings:
        if self.hold and self.policy == "lease_order":
            raise ValueError("hold needs a learning policy (ucb1 or alns): lease order forms no blocks")
        return self

    @property
    def adaptive(self) -> bool:
        return self.policy != "lease_order"

    def clamp(self, size: float) -> float:
        """``size`` within [min_size, max_size] (max_size wins where the two cross: JSON Schema cannot say
        min_size <= max_size, so every pair the schema allows means something)."""
        return min(self.max_size, max(self.min_size, size))
