"""One routing instance: the grid, the robots' starts and goals, and the block partition.

Built from ``RoutingParams``; every bad input becomes an InvalidParams that
names the parameter and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.paths import DataPath
from tasks.registry import InvalidParams
from tasks.routing import generate, movingai, partition
from tasks.routing.grid import UNREACHABLE, Grid

GENERATED = "generated"
MAP_PATH = DataPath(lambda v: "/" in v or v.endswith(".map"))
SCEN_PATH = DataPath(lambda v: "/" in v or v.endswith(".scen"))
"""Values with a slash or the file suffix are paths (as ``movingai.resolve_*`` reads them); others are bundled."""


class RoutingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    map: Annotated[str, MAP_PATH] = Field(
        "random-32-32-10",
        description=f"bundled MovingAI map name, a .map path, or '{GENERATED}' for a seeded random grid",
    )
    scen: Annotated[str | None, SCEN_PATH] = Field(
        None,
        description="scenario: 'random-N' for the map, a bundled name or a .scen path (default random-1)",
    )
    robots: int = Field(50, ge=1, le=2000, description="number of robots k (first k scenario lines)")
    blocks: int | None = Field(None, ge=1, le=2000, description="number of blocks (default: one per agent)")
    partition: Literal["interaction", "spatial", "round_robin"] = Field(
        "spatial",
        description="how robots are grouped into blocks: route midpoints clustered (spatial), robots whose"
        " shortest paths meet share a block (interaction), or i mod blocks (round_robin)",
    )
    seed: int = Field(0, ge=0, description="seed of generated grids and of the run")
    width: int = Field(16, ge=2, le=512, description="width of a generated grid")
    height: int = Field(16, ge=2, le=512, description="height of a generated grid")
    density: float = Field(0.1, ge=0.0, le=0.6, description="obstacle density of a generated grid")
    regroup: bool = Field(
        True,
        description="after a round that merged nothing, re-partition so that robots holding each other up"
        " share a block (block sizes are kept)",
    )
    margin: int = Field(
        4,
        ge=0,
        le=512,
        description="cells around the block's robots kept in the contract's reservation table",
    )
    max_len: int | None = Field(None, ge=1, description="longest allowed path (default 2 x free cells)")
    initial: Literal["prioritized", "shortest"] = Field(
        "prioritized",
        description="first plan: prioritized planning that minimizes collisions instead of failing"
        " (LNS2's start), or every robot on its own shortest path, ignoring the others",
    )
    initial_repair: float = Field(
        30.0,
        ge=0.0,
        le=3600.0,
        description="seconds of LNS2's collision repair on the whole prioritized first plan, stopping at the"
        " first collision-free plan (0 = leave the collisions to the agents)",
    )
    neighbourhood_leases: bool = Field(
        True,
        description="form each lease's block at lease time where the plan has delay, from the robots no other"
        " agent holds (block sizes change); off: blocks keep the sizes of the first partition",
    )
    lease_overlap: bool = Field(
        True,
        description="with neighbourhood_leases: a lease's robots are drawn from the whole plan, robots other"
        " agents hold included, as DROP-LNS's workers draw theirs; an answer writes only the robots it changed"
        " and merges only if it improves the plan as it is when it arrives (off: no robot in two leases)",
    )
    lease_robots: int | None = Field(
        None,
        ge=1,
        le=2000,
        description="robots in a lease with lease_overlap (default: every robot; each agent keeps one walk over"
        " the whole plan and follows the others' merges); fewer than every robot: a team opens with whole-plan"
        " leases while most leases merge (opening)",
    )
    opening: bool = Field(
        True,
        description="with lease_overlap, a team and lease_robots below every robot: every lease holds the whole"
        " plan and asks for an answer within 0.1 s while at least a fifth of recent leases merge, then leases"
        " lease_robots",
    )
    level_merges: bool = Field(
        False,
        description="a team's whole-plan leases ask for an answer after 0.05 s of search, gain or not: a walk"
        " that kept the sum of costs is merged too, so the plan walks with every agent's search (off, the"
        " default: only answers that shorten the plan merge; on, the coordinator scores about four times the"
        " answers)",
    )
    rebase_repair: float = Field(
        0.0,
        ge=0.0,
        le=10.0,
        description="seconds the coordinator may spend re-planning, against the current plan, the robots of a"
        " proposal that collide with paths merged after its base, when putting them back to their current"
        " paths keeps no gain (0 = no repair, the default; BENCHMARKS.md, Team scaling)",
    )
    exact_limit: float = Field(
        10.0,
        ge=0.0,
        le=3600.0,
        description="CP-SAT seconds for the exact optimum of small instances (0 = off)",
    )


@dataclass(frozen=True)
class Instance:
    grid: Grid
    name: str
    starts: tuple[int, ...]
    goals: tuple[int, ...]
    blocks: tuple[tuple[int, ...], ...]
    max_len: int

    @property
    def n_robots(self) -> int:
        return len(self.starts)


def _bad(param: str, reason: str) -> InvalidParams:
    return InvalidParams("routing", param, reason)


def _interaction_weights(
    grid: Grid, starts: tuple[int, ...], goals: tuple[int, ...], slack: int = 2
) -> dict[tuple[int, int], float]:
    """How often two robots' shortest paths pass one cell within ``slack`` steps of each other."""
    visits: dict[int, list[tuple[int, int]]] = {}
    for r, (s, g) in enumerate(zip(starts, goals, strict=True)):
        for t, c in enumerate(grid.shortest_path(s, g)):
            visits.setdefault(c, []).append((t, r))
    weights: dict[tuple[int, int], float] = {}
    for here in visits.values():
        for a in range(len(here)):
            ta, ra = here[a]
            for b in range(a + 1, len(here)):
                tb, rb = here[b]
                if ra != rb and abs(ta - tb) <= slack:
                    key = (ra, rb) if ra < rb else (rb, ra)
                    weights[key] = weights.get(key, 0.0) + 1.0
    return weights


def build_instance(p: RoutingParams) -> Instance:
    try:
        if p.map == GENERATED:
            grid = generate.random_grid(p.width, p.height, p.density, p.seed)
            agents = generate.random_agents(grid, p.robots, p.seed)
            name = f"{grid.name}-k{p.robots}"
        else:
            grid = movingai.load_map(p.map)
            scen = p.scen or "random-1"
            agents = movingai.load_scen(scen, grid.name, grid, p.robots)
            scen_stem = scen.rsplit("/", 1)[-1].removesuffix(".scen").removeprefix(f"{grid.name}-")
            name = f"{grid.name}-{scen_stem}-k{p.robots}"
    except movingai.BadInstance as exc:
        raise _bad(exc.param, exc.reason) from None
    starts = tuple(grid.cell(*a.start) for a in agents)
    goals = tuple(grid.cell(*a.goal) for a in agents)
    for label, cells in (("starts", starts), ("goals", goals)):
        if len(set(cells)) != len(cells):
            dup = next(c for c in cells if cells.count(c) > 1)
            raise _bad(
                "robots", f"two robots share the {label[:-1]} {grid.xy(dup)}: {label} must be distinct"
            )
    for i, (s, g) in enumerate(zip(starts, goals, strict=True)):
        if grid.distances(g)[s] == UNREACHABLE:
            raise _bad("scen", f"robot {i} cannot reach its goal {grid.xy(g)} from {grid.xy(s)}")
    n_blocks = p.blocks or 1
    if n_blocks > len(starts):
        raise _bad("blocks", f"{n_blocks} blocks for {len(starts)} robots: at most one block per robot")
    if p.partition == "round_robin":
        groups = partition.round_robin(len(starts), n_blocks)
    else:
        mids = []
        for s, g in zip(starts, goals, strict=True):
            (sx, sy), (gx, gy) = grid.xy(s), grid.xy(g)
            mids.append(((sx + gx) / 2, (sy + gy) / 2))
        groups = partition.spatial(mids, n_blocks, p.seed)
        if p.partition == "interaction" and n_blocks > 1:
            groups = partition.by_interaction(_interaction_weights(grid, starts, goals), groups)
    free = sum(grid.free)
    max_len = p.max_len or 2 * free
    longest = max(grid.distances(g)[s] for s, g in zip(starts, goals, strict=True))
    if max_len < longest:
        raise _bad("max_len", f"{max_len} is shorter than the longest shortest path ({longest})")
    return Instance(grid, name, starts, goals, tuple(tuple(g) for g in groups), max_len)
