"""The agent's side of contracts written since the one it keeps (``ContractDeltas``).

A team agent's lease holds the whole plan, and between two of its leases a few tens of 300 paths change. The
proposer keeps its last whole-plan contract here; the worker then asks for the next written since it
(``since``), and the coordinator writes a robot whose path is the same as ``{"id": r}``. Reading such a
contract gives the same robots, starts, goals and paths as the whole one, the unchanged paths the very tuples
kept, so that a search following the plan tells the changes apart by identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from tasks.routing.grid import Grid
from tasks.routing.occupancy import Path

Robots = tuple[list[int], list[int], list[int], list[Path]]
"""A contract's robots as the proposer searches them: (ids, starts, goals, paths), in contract order."""


class ContractNotKept(ValueError):
    """A contract written since a version this agent does not keep: a coordinator's fault, never the agent's
    (it asks with ``since`` only for what it keeps)."""


class KeptContract(NamedTuple):
    """The robots of the last whole-plan contract, by id."""

    version: int
    starts: dict[int, int]
    goals: dict[int, int]
    paths: dict[int, Path]


class ContractReader:
    """Reads each contract's robots and keeps a whole-plan one (all of the instance's ``robots``; 0: none is
    kept) for the next to be written since it."""

    def __init__(self, grid: Grid, robots: int) -> None:
        self.grid, self.robots = grid, robots
        self.kept: KeptContract | None = None

    @property
    def version(self) -> int | None:
        """The version of the contract kept (the worker's ``since``), or None."""
        return None if self.kept is None else self.kept.version

    def forget(self) -> None:
        """Keep nothing: the next contract comes whole."""
        self.kept = None

    def read(self, contract: Mapping[str, Any]) -> Robots:
        """The contract's robots, a robot written ``{"id": r}`` in a contract since the kept one taken from
        it; raises ``ContractNotKept`` for a contract written since another version."""
        grid, kept = self.grid, self.kept
        since = contract.get("since")
        if since is not None and (kept is None or kept.version != since):
            raise ContractNotKept(
                f"a contract written since version {since}, and this agent keeps "
                f"{'none' if kept is None else kept.version}"
            )
        ids: list[int] = []
        starts: list[int] = []
        goals: list[int] = []
        paths: list[Path] = []
        for r in contract["data"]["robots"]:
            robot = int(r["id"])
            ids.append(robot)
            if "path" in r:
                starts.append(grid.cell(*r["start"]))
                goals.append(grid.cell(*r["goal"]))
                paths.append(grid.path_cells(r["path"]))
            elif kept is not None and since is not None:
                starts.append(kept.starts[robot])
                goals.append(kept.goals[robot])
                paths.append(kept.paths[robot])
            else:
                raise ContractNotKept(f"robot {robot} has no path and the contract is not written since one")
        whole = self.robots > 0 and len(ids) == self.robots and "version" in contract
        self.kept = (
            KeptContract(
                int(contract["version"]),
                dict(zip(ids, starts, strict=True)),
                dict(zip(ids, goals, strict=True)),
                dict(zip(ids, paths, strict=True)),
            )
            if whole
            else None
        )
        return ids, starts, goals, paths
