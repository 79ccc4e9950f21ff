"""Routing's state: what the task scores and the neighbourhood generators re-form, in a module of its own so
that both can name it without importing each other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tasks.routing.occupancy import OccupancyIndex, Path
from tasks.routing.regroup import Blocks

Proposed = tuple[Path | None, ...]
"""A block's value as proposed: one path per robot of the block in contract order, None where the robot keeps
its path (with overlapping leases another agent may have moved it since: a full path would move it back)."""


class LazyIndex:
    """A state's occupancy index, made when first read: from the index of the state it came from, if that one
    was made (a copy, the changed paths out and in), else from its paths. The coordinator's scoring and
    rebase read the plan's count arrays (``plan_mirror.py``), so a team's commits need no index: keeping one
    for every head was a sixth of the coordinator's CPU with 16 agents (a copy and a few dozen paths out and
    in, per commit), read only by partial leases, regrouping and a rebase without the scoring's scan."""

    def __init__(
        self,
        n_cells: int,
        paths: tuple[Path, ...],
        made: OccupancyIndex | None = None,
        parent: LazyIndex | None = None,
        old: Mapping[int, Path] | None = None,
        new: Mapping[int, Path] | None = None,
    ) -> None:
        self._n_cells, self._paths, self._made = n_cells, paths, made
        # the parent's index, if made, with what changed since: a copy of it is one path change away
        self._from = (parent._made, old or {}, new or {}) if parent is not None and parent._made else None

    def get(self) -> OccupancyIndex:
        made = self._made
        if made is None:
            if self._from is not None:
                base, old, new = self._from
                made = base.copy()
                for r, p in old.items():
                    made.remove(r, p)
                for r, p in new.items():
                    made.add(r, p)
            else:
                made = OccupancyIndex.build(self._n_cells, dict(enumerate(self._paths)))
            self._made, self._from = made, None
        return made

    def after(self, paths: tuple[Path, ...], old: Mapping[int, Path], new: Mapping[int, Path]) -> LazyIndex:
        """The index of ``paths``, this one's with ``old`` paths replaced by ``new`` ones."""
        return LazyIndex(self._n_cells, paths, parent=self, old=old, new=new)


@dataclass(frozen=True)
class RoutingState:
    """Paths per robot, the occupancy index (made when read), the running totals, the robots of each block;
    never mutated."""

    paths: tuple[Path, ...]
    lazy_index: LazyIndex = field(compare=False, repr=False)
    soc: int
    conflicts: int
    blocks: Blocks
    """Robot ids per block: the instance's partition until a regrouping changes it (same sizes)."""

    @property
    def index(self) -> OccupancyIndex:
        return self.lazy_index.get()
