"""Index choice under a byte budget as a 0/1 knapsack, solved exactly with CP-SAT.

Items are candidate index bundles with a measured gain (cost saved when added alone to the current
set) and a measured size. Two bundles that share an index, or that serve the same query, interact;
the knapsack treats gains as additive, so its pick is only a proposal order: the caller then
checks each addition against the exact measured objective, as the coordinator's ``checked`` merge
does for combinations.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model


@dataclass(frozen=True)
class Item:
    key: Hashable
    gain: int
    size: int
    group: Hashable | None = None
    """items of one group (e.g. alternative indexes for one query) are mutually exclusive."""


def choose(items: Sequence[Item], capacity: int, seconds: float = 1.0) -> list[Hashable]:
    """Keys of the items maximizing total gain with total size ≤ capacity (at most one per group)."""
    useful = [it for it in items if it.gain > 0 and it.size <= capacity]
    if not useful or capacity <= 0:
        return []
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{i}") for i in range(len(useful))]
    model.add(sum(it.size * v for it, v in zip(useful, x, strict=True)) <= capacity)
    groups: dict[Hashable, list[cp_model.IntVar]] = {}
    for it, v in zip(useful, x, strict=True):
        if it.group is not None:
            groups.setdefault(it.group, []).append(v)
    for vs in groups.values():
        model.add_at_most_one(vs)
    model.maximize(sum(it.gain * v for it, v in zip(useful, x, strict=True)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return []
    chosen = [it for it, v in zip(useful, x, strict=True) if solver.value(v)]
    return [it.key for it in sorted(chosen, key=lambda it: -it.gain / max(1, it.size))]
