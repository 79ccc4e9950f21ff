"""Ownership: a proposal writes only the elements its lease holds, one check for every kind and mode.

A kind says which elements a block holds (``Ownership.block_elements``) and which a value writes
(``Ownership.written_elements``); the engine's admission (``RoundEngine.admit``, used by rounds and async
mode alike) refuses a value that writes anything else, before it is scored, so nothing of it can merge.
The held elements are read from a state, not from the instance: a lease holds what its block held in
the state it was granted on. An admitted proposal is not stale, so its block's membership in the head is
that state's (any re-forming of a block bumps its version). A lease whose elements are formed when it is
granted passes them as ``held``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from coordinator import errors
from tasks import capabilities
from tasks.base import OUTSIDE_LEASE, Task

SHOWN = 8
"""Elements named in a refusal's message at most (the rest are counted)."""


def describe(elements: Iterable[Hashable]) -> str:
    """``robot 3, robot 7`` for ``{("robot", 3), ("robot", 7)}``: tuples read as words, sorted, cut short."""
    words = sorted(" ".join(map(str, e)) if isinstance(e, tuple) else str(e) for e in elements)
    more = f" and {len(words) - SHOWN} more" if len(words) > SHOWN else ""
    return ", ".join(words[:SHOWN]) + more


def foreign_elements(
    task: Task[Any], state: Any, block: int, value: Any, held: frozenset[Hashable] | None = None
) -> frozenset[Hashable]:
    """The elements ``value`` writes that the lease does not hold (``held``; default: the block's in
    ``state``)."""
    mine = capabilities.block_elements(task, state, block) if held is None else held
    return capabilities.written_elements(task, state, block, value) - mine


def check_inside_lease(
    task: Task[Any], state: Any, block: int, value: Any, held: frozenset[Hashable] | None = None
) -> None:
    """Refuse (``ProposalRefused``, reason ``outside_lease``) a value that writes outside its lease."""
    foreign = foreign_elements(task, state, block, value, held)
    if foreign:
        mine = capabilities.block_elements(task, state, block) if held is None else held
        raise errors.ProposalRefused(
            f"the value for block {block} writes {describe(foreign)}, outside its lease"
            f" (block {block} holds {describe(mine)})",
            reason_code=OUTSIDE_LEASE,
            block=block,
        )
