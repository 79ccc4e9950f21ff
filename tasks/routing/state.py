"""Routing's state: what the task scores and the neighbourhood generators re-form, in a module of its own so
that both can name it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.routing.occupancy import OccupancyIndex, Path
from tasks.routing.regroup import Blocks

Proposed = tuple[Path | None, ...]
"""A block's value as proposed: one path per robot of the block in contract order, None where the robot keeps
its path (with overlapping leases another agent may have moved it since: a full path would move it back)."""


@dataclass(frozen=True)
class RoutingState:
    """Paths per robot, the occupancy index, the running totals, the robots of each block; never mutated."""

    paths: tuple[Path, ...]
    index: OccupancyIndex
    soc: int
    conflicts: int
    blocks: Blocks
    """Robot ids per block: the instance's partition until a regrouping changes it (same sizes)."""
