"""The routing kind (docs/architecture.md §3 "routing"): F = sum of costs + W x conflicts, incrementally.

One job over 400 lines: the Task interface for one kind (state, scoring, validation, contracts, views); the
planners and the contract builder live in their own modules.
"""

from __future__ import annotations

import pathlib
import random
import time
from collections.abc import Hashable, Mapping
from dataclasses import replace
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tasks import capabilities
from tasks.base import InvalidProposal, Reference, RenderedContract, Task
from tasks.routing import plan_jit, sipp_jit
from tasks.routing.contract import GeometryCache, build_contract
from tasks.routing.destroy import delays
from tasks.routing.instance import Instance, RoutingParams, build_instance
from tasks.routing.lease import form_overlapping_lease, form_routing_lease
from tasks.routing.lns import RoutingProposer
from tasks.routing.neighbourhoods import NAMES, form_routing_blocks
from tasks.routing.occupancy import (
    ChangeScan,
    OccupancyIndex,
    Path,
    canonical,
    conflicts_between,
    cost,
    full_conflicts,
)
from tasks.routing.opening import OPENING_SECONDS, WALK_SECONDS, Opening
from tasks.routing.plan_mirror import PlanMirror
from tasks.routing.prompt import RoutingPrompt
from tasks.routing.rebase import Rebaser
from tasks.routing.regroup import Blocks, holding_up, regroup_by_weight
from tasks.routing.repair import prioritized, repair
from tasks.routing.reservations import Reservations
from tasks.routing.state import LazyIndex, Proposed, RoutingState

TEAM_STOP_AFTER = 300
"""An async team's ``stop_after`` (``RoutingTask.team_defaults``): side by side with 100 (random-32-32-10,
k = 300, seeds 1-3), the coordinator 35-36 % busy against 52-54 % at 16 agents and 17-19 % against 25-27 % at
8, the heads no worse: within the spread of one tree's runs (docs/notes/2026-12-06-fewer-returns.md)."""

INITIAL_REPAIR_PATIENCE = 1000
"""The first plan's repair stops after this many steps without fewer collisions: on a map with no
collision-free plan it would hold ``initial_repair`` seconds (30 by default) for nothing. On the dense
benchmark maps a step costs 0.05-1 s, so the deadline comes first there."""


class RoutingProposerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    time_budget: float = Field(0.5, gt=0.0, le=600.0, description="seconds of LNS per proposal")
    neighbourhood: int = Field(8, ge=1, le=1000, description="robots re-planned together in one LNS step")
    stop_after: int = Field(
        100,
        ge=0,
        le=1_000_000,
        description="LNS steps in a row without a lower sum of costs after which a collision-free block's"
        " proposal ends before its budget (0: always the whole budget)",
    )
    answer_after: int = Field(
        10,
        ge=0,
        le=1_000_000,
        description="LNS steps in a row without a lower sum of costs after which a team's proposal that has"
        " gained answers (0: only stop_after and the budget end it); an answer sent sooner merges on a fresher"
        " plan",
    )
    follow_every: float = Field(
        0.0,
        ge=0.0,
        le=60.0,
        description="seconds of a team's whole-plan search between asks for what merged meanwhile"
        " (GET .../changes), taken into the search so that it answers on a fresher head; 0 (the default):"
        " never, since 16 agents that asked every 0.02 s ended behind those that did not",
    )
    keep_contract: bool = Field(
        True,
        description="keep the last whole-plan contract and ask for the next written against it (since): only"
        " the robots whose paths changed come with their paths; false: every contract whole",
    )
    patience: int = Field(
        3,
        ge=0,
        le=1000,
        description="extra empty rounds before the run counts as stalled (LNS is random: a miss is not a proof)",
    )


class RoutingTask(Task[RoutingState, RoutingParams]):
    """Multi-robot path finding on a 4-connected grid (MovingAI instances or generated grids)."""

    kind = "routing"
    Params = RoutingParams
    ProposerParams = RoutingProposerParams
    rejection_codes = frozenset({"illegal_move", "over_budget", "wrong_robot"})
    prompt = RoutingPrompt
    example = {
        "map": "random-32-32-10",
        "robots": 24,
        "blocks": 6,
        "exact_limit": 0,
        "time_budget": 0.3,
        "initial": "shortest",  # the prioritized start leaves this instance 2 above its bound: nothing to find
    }
    presets = {
        "demo": {"map": "random-32-32-10", "scen": "random-32-32-10-random-1", "robots": 50, "seed": 1}
    }

    @classmethod
    def team_defaults(cls, agents: int, mode: str = "rounds") -> dict[str, Any]:
        """One block of robots per agent; in async mode one more for a team. Agents there are always at
        work, and an empty round regroups only the blocks nobody holds: the spare block is what the block
        an agent just gave up on is regrouped with (2 agents with 3 blocks beat 2 with 4 at 300 robots).
        One agent has nobody to make room for: one block lets it see every robot (6 of 9 seeded runs at
        least as good as with 2 blocks; docs/notes/2026-12-03-lns-walk.md, "One agent, one block").

        An async team's searches go on to ``TEAM_STOP_AFTER`` steps without a gain: a search that found
        nothing costs a lease and its report at the coordinator, and at 16 agents those took half its core."""
        if mode == "async" and agents > 1:
            return {"blocks": agents + 1, "stop_after": TEAM_STOP_AFTER}
        return {"blocks": agents}

    def run_seed(self) -> int:
        return self.p.seed

    def __init__(self, params: RoutingParams) -> None:
        super().__init__(params)
        self.p = params
        self.inst: Instance = build_instance(params)
        self.grid = self.inst.grid
        self.weight = self.inst.n_robots * self.inst.max_len + 1
        """W: more than any sum of path lengths, so one conflict outweighs any detour."""
        self._geometry = GeometryCache(self.grid.width)
        """Per-robot path cells and boxes for contracts, recomputed only for the paths that change."""
        self._holding_up: tuple[tuple[Path, ...], dict[tuple[int, int], float]] | None = None
        self._delays: tuple[tuple[Path, ...], list[int]] | None = None
        self._cells: tuple[tuple[Path, ...], list[list[int]]] | None = None
        self._last_change: tuple[RoutingState, list[tuple[int, Proposed]], int] | None = None
        """(state, changes, their change in conflicts) of the last ``evaluate_change``: the engine applies
        the value it just scored, and ``apply`` need not count its conflicts a second time."""
        self._last_scan: tuple[RoutingState, list[tuple[int, Proposed]], ChangeScan] | None = None
        """The last change counted from scratch, with the work of its count: a stale answer is scored, then
        rebased (``rebase``), and the rebase's first pass reads which paths collide off it."""
        self._mirror = PlanMirror(self.grid.n_cells, self.grid.width)
        self._rebaser = Rebaser(self.grid, self.inst.starts, self.inst.goals, self.inst.max_len, self._mirror)
        self._opening = self._team_opening()
        self._robot_of_start = {s: r for r, s in enumerate(self.inst.starts)}
        """Starts are distinct, so a path names its robot by its first cell (how ``validate`` stays stateless)."""

    # -- instance -----------------------------------------------------------
    @property
    def name(self) -> str:
        return self.inst.name

    @property
    def n_blocks(self) -> int:
        return len(self.inst.blocks)

    def initial_state(self) -> RoutingState:
        """Prioritized planning with the fewest collisions, then LNS2's repair of the whole plan for up to
        ``initial_repair`` seconds (repair.py), or every robot on its own shortest path ignoring the others
        (``initial="shortest"``)."""
        return self._initial

    @cached_property
    def _initial(self) -> RoutingState:
        """Planned once: prioritized planning of hundreds of robots takes seconds."""
        g, inst = self.grid, self.inst
        if self.p.initial == "prioritized":
            # shortest trips first: they park early and the long ones route round them (SOC/LB of the
            # first plan 1.02 against 1.14 in scenario order on random-32-32-10 k=100, 1.08 against 1.31
            # at k=200, 1.02 against 1.18 on warehouse k=200; longest first is worse still)
            d = [g.distances(t)[s] for s, t in zip(inst.starts, inst.goals, strict=True)]
            order = sorted(range(inst.n_robots), key=lambda r: (d[r], r))
            planned = prioritized(g, inst.starts, inst.goals, inst.max_len, soft=True, order=order)
            assert planned is not None  # soft planning always returns a plan
            state = self.state_of(tuple(planned))
            if state.conflicts and self.p.initial_repair > 0:
                # with the whole plan in view: a collision between robots of two blocks, or one that
                # needs a robot of another block to arrive later, is out of every agent's reach until a
                # regrouping, and a proposal's budget is short for the long searches of a dense map
                fixed = repair(
                    g, inst.starts, inst.goals, planned, Reservations(g.n_cells), inst.max_len,
                    deadline=time.perf_counter() + self.p.initial_repair, rng=random.Random(self.p.seed),
                    patience=INITIAL_REPAIR_PATIENCE,
                )  # fmt: skip
                state = self.state_of(tuple(fixed.paths))
            return state
        paths = tuple(tuple(g.shortest_path(s, t)) for s, t in zip(inst.starts, inst.goals, strict=True))
        return self.state_of(paths)

    def state_of(self, paths: tuple[Path, ...], blocks: Blocks | None = None) -> RoutingState:
        index = OccupancyIndex.build(self.grid.n_cells, dict(enumerate(paths)))
        return RoutingState(
            paths,
            LazyIndex(self.grid.n_cells, paths, made=index),
            sum(cost(p) for p in paths),
            index.total_conflicts(),
            blocks or self.inst.blocks,
        )

    # -- model -----------------------------------------------------------------
    def objective(self, state: RoutingState) -> float:
        return float(state.soc + self.weight * state.conflicts)

    def full_objective(self, paths: tuple[Path, ...]) -> float:
        """From scratch, without any cached index (tests compare it with the incremental totals)."""
        conflicts = full_conflicts(self.grid.n_cells, dict(enumerate(paths)))
        return float(sum(cost(p) for p in paths) + self.weight * conflicts)

    def _changed(
        self, state: RoutingState, changes: Mapping[int, Proposed]
    ) -> tuple[dict[int, Path], dict[int, Path]]:
        old: dict[int, Path] = {}
        new: dict[int, Path] = {}
        for b, value in changes.items():
            if len(value) != len(state.blocks[b]):
                raise InvalidProposal(
                    f"block {b} needs a list of {len(state.blocks[b])} paths (one per robot, in contract"
                    f" order); it got {len(value)}",
                    "bad_shape",
                )
            for r, p in zip(state.blocks[b], value, strict=True):
                if p is None:
                    continue
                if p[0] != self.inst.starts[r]:
                    raise InvalidProposal(
                        f"block {b}: the path at position {state.blocks[b].index(r)} is not robot {r}'s"
                        f" (starts at {self.grid.xy(p[0])}); the block's robots are {list(state.blocks[b])}",
                        "wrong_robot",
                    )
                if state.paths[r] != p:
                    old[r] = state.paths[r]
                    new[r] = p
        return old, new

    def evaluate_change(self, state: RoutingState, changes: Mapping[int, Proposed]) -> float:
        """Costs about the length of the changed paths: only they are looked up in the index."""
        old, new = self._changed(state, changes)
        d_soc = sum(cost(p) for p in new.values()) - sum(cost(p) for p in old.values())
        d_conf = self._conflicts_change(state, changes, old, new)
        return float(state.soc + d_soc + self.weight * (state.conflicts + d_conf))

    def _conflicts_change(
        self,
        state: RoutingState,
        changes: Mapping[int, Proposed],
        old: dict[int, Path],
        new: dict[int, Path],
    ) -> int:
        """``change_in_conflicts``, or the last call's answer when ``changes`` are the very values (by
        identity) it was given on this very state."""
        if not new:
            return 0
        last = self._last_change
        if last is not None and _same_change(last[0], last[1], state, changes):
            return last[2]
        scan = self._scan(state, old, new)
        self._last_change = (state, list(changes.items()), scan.d_conf)
        self._last_scan = (state, list(changes.items()), scan)
        return scan.d_conf

    def _scan(self, state: RoutingState, old: dict[int, Path], new: dict[int, Path]) -> ChangeScan:
        """The change's conflicts off the plan's compiled mirror; the paths about to go have none on a plan
        without conflicts (most heads are such plans), so they are counted only on the others."""
        outside, inside = self._mirror.scan(state.paths, old, new)
        before = 0
        if state.conflicts:
            gone_outside, gone_inside = self._mirror.scan(state.paths, old, old)
            before = sum(gone_outside.values()) + sum(gone_inside.values()) // 2
        return ChangeScan(sum(outside.values()) + sum(inside.values()) // 2 - before, outside, inside)

    def apply(self, state: RoutingState, changes: Mapping[int, Proposed]) -> RoutingState:
        old, new = self._changed(state, changes)
        if not new:
            return state
        d_conf = self._conflicts_change(state, changes, old, new)
        paths = list(state.paths)
        for r, p in new.items():
            paths[r] = p
        d_soc = sum(cost(p) for p in new.values()) - sum(cost(p) for p in old.values())
        if self._opening is not None:  # (apply is the engine's commit)
            for b in changes:
                self._opening.merged(b)
        after = tuple(paths)
        index = state.lazy_index.after(after, old, new)
        return RoutingState(after, index, state.soc + d_soc, state.conflicts + d_conf, state.blocks)

    def block_value(self, state: RoutingState, block: int) -> tuple[Path, ...]:
        return tuple(state.paths[r] for r in state.blocks[block])

    def changed_blocks(self, before: RoutingState, after: RoutingState) -> list[int]:
        """Forming leases and blocks moves robots between blocks and no path: on the same paths a block's
        value changed exactly where its robots did (two robots never have one path: starts are distinct)."""
        if before.paths is not after.paths:
            values = self.block_value
            return [b for b in range(len(after.blocks)) if values(after, b) != values(before, b)]
        return [b for b, (x, y) in enumerate(zip(before.blocks, after.blocks, strict=True)) if x != y]

    def block_elements(self, state: RoutingState, block: int) -> frozenset[Hashable]:
        """The block's robots in ``state`` (a regrouping changes them)."""
        return frozenset(("robot", r) for r in state.blocks[block])

    def written_elements(self, state: RoutingState, block: int, value: Proposed) -> frozenset[Hashable]:
        """The robots whose paths the value holds: a path names its robot by its start (starts are distinct), so
        a path that starts where another block's robot starts writes that robot."""
        return frozenset(("robot", self._robot_of_start[p[0]]) for p in value if p is not None)

    def footprint(self, state: RoutingState, block: int, value: Proposed) -> frozenset[Hashable]:
        """Cells of the old and new paths of the robots that change: every conflict shares a cell."""
        cells: set[int] = set()
        for r, p in zip(state.blocks[block], value, strict=True):
            if p is not None and state.paths[r] != p:
                cells.update(p)
                cells.update(state.paths[r])
        return frozenset(cells)

    def interaction(
        self, state: RoutingState, p: tuple[int, Any], q: tuple[int, Any], f0: float | None = None
    ) -> float:
        """c_pq = W x (X(P', Q') − X(P', Q) − X(P, Q') + X(P, Q)), X = conflicts between two robot sets.

        Everything else in F is separable between two blocks, so only the cross
        conflicts of the changed robots can make Δ_pq differ from Δ_p + Δ_q.
        """
        if p[0] == q[0]:
            return capabilities.measured_interaction(self, state, p, q, f0)
        op, np_ = self._changed(state, {p[0]: p[1]})
        oq, nq = self._changed(state, {q[0]: q[1]})
        if not np_ or not nq:
            return 0.0
        n = self.grid.n_cells
        x = (
            conflicts_between(n, np_, nq)
            - conflicts_between(n, np_, oq)
            - conflicts_between(n, op, nq)
            + conflicts_between(n, op, oq)
        )
        return float(self.weight * x)

    def rebase(self, state: RoutingState, block: int, value: Proposed) -> Proposed | None:
        """A stale proposal settled against the current plan (rebase.py): its colliding robots put back to
        their current paths, or failing a gain that way repaired for up to ``rebase_repair`` seconds (0: no
        repair); None when nothing collides or nothing of it can be kept."""
        rng = random.Random(self.p.seed + block)
        last = self._last_scan
        self._last_scan = None  # read once: the rebase changes what the scan was of
        scan = last[2] if last is not None and _same_change(last[0], last[1], state, {block: value}) else None
        fixed = self._rebaser.rebase(state, state.blocks[block], value, self.p.rebase_repair, rng, scan)
        if fixed is not None and state.conflicts == 0:
            # what it kept fits the plan (``keep_what_fits``, or a repair without collisions) and the plan has
            # no conflict to lose: the engine scores it next, and its conflicts need no counting
            self._last_change = (state, [(block, fixed)], 0)
        return fixed

    def moves(self, state: RoutingState, block: int, value: Proposed) -> bool:
        """Whether ``value`` gives a robot of ``block`` another path (``LevelMerges``): a team's search walks
        among plans of one sum of costs, and the head walks with it."""
        if not self.p.level_merges:
            return False
        paths = state.paths
        return any(p is not None and p != paths[r] for r, p in zip(state.blocks[block], value, strict=True))

    def head_changes(self, before: RoutingState, after: RoutingState) -> dict[str, Any]:
        """The robots whose paths differ from ``before`` to ``after``, each with its path in the contract's
        [x, y] form: ``{"paths": {"robot id": [[x, y], ...]}}``. A merge shares the paths it left alone, so
        most robots are told apart by identity."""
        xy = self.grid.xy
        return {
            "paths": {
                str(r): [list(xy(c)) for c in p]
                for r, (b, p) in enumerate(zip(before.paths, after.paths, strict=True))
                if p is not b and p != b
            }
        }

    def holding_up(self, state: RoutingState) -> dict[tuple[int, int], float]:
        """``regroup.holding_up`` of the plan, kept for the last plan: empty rounds regroup the same plan
        again and again (a third of the coordinator's time at 300 robots went into recomputing it)."""
        kept = self._holding_up
        if kept is None or kept[0] is not state.paths:
            weights = holding_up(self.grid, self.inst.starts, self.inst.goals, state.paths, state.index)
            kept = self._holding_up = (state.paths, weights)
        return kept[1]

    def delays(self, state: RoutingState) -> list[int]:
        """Each robot's delay (path length over its shortest), kept for the last plan: every lease reads it."""
        kept = self._delays
        if kept is None or kept[0] is not state.paths:
            inst = self.inst
            kept = self._delays = (state.paths, delays(self.grid, state.paths, inst.starts, inst.goals))
        return kept[1]

    @property
    def lease_robots(self) -> int:
        """Robots in an overlapping lease: every robot unless ``lease_robots`` says fewer. Each agent then
        keeps one walk over the whole plan and follows what the others merge into it (``RoutingProposer``'s
        kept search), as DROP-LNS's workers do; side by side at k = 300 (random-32-32-10, 30 s) that beat
        leases of a fifth with an opening: 8 agents 7,044 / 7,072 against 7,074 / 7,084, 16 agents 7,031
        against 7,054 (docs/notes/2026-12-06-whole-plan-walks.md). Leases of a fifth or a block's share
        gained more than whole-plan leases only while each search was rebuilt and its walk dropped
        (docs/notes/2026-12-05-lease-sizes.md)."""
        return self.p.lease_robots or self.inst.n_robots

    def _team_opening(self) -> Opening | None:
        """Leases smaller than the plan open with the whole plan (``opening.py``); whole-plan leases (the
        default) and one agent's one block hold every robot anyway."""
        p = self.p
        if not (p.neighbourhood_leases and p.lease_overlap and p.opening):
            return None
        return Opening() if self.n_blocks > 1 and self.lease_robots < self.inst.n_robots else None

    @property
    def neighbourhood_leases(self) -> bool:
        return self.p.neighbourhood_leases

    def form_lease(
        self, state: RoutingState, block: int, held: frozenset[int], attempt: int
    ) -> RoutingState | None:
        if not self.p.neighbourhood_leases:
            return None
        if self.p.lease_overlap:
            opening = self._opening
            if opening is not None:
                opening.leased(block)
            k = self.inst.n_robots if opening is not None and opening.open else self.lease_robots
            return form_overlapping_lease(self, state, block, k, attempt)
        return form_routing_lease(self, state, block, held, attempt)

    def regroup(
        self, state: RoutingState, attempt: int, keep: frozenset[int] = frozenset()
    ) -> RoutingState | None:
        if not self.p.regroup:
            return None
        if keep:
            return self.form_blocks(state, "interaction", 1.0, attempt, keep)
        weights = self.holding_up(state)
        blocks = regroup_by_weight(state.blocks, weights, attempt)
        return None if blocks is None else replace(state, blocks=blocks)

    def neighbourhoods(self) -> tuple[str, ...]:
        return NAMES

    def form_blocks(
        self,
        state: RoutingState,
        generator: str,
        size: float,
        attempt: int,
        keep: frozenset[int] = frozenset(),
    ) -> RoutingState | None:
        return form_routing_blocks(self, state, generator, size, attempt, keep)

    def contract(self, state: RoutingState, block: int) -> RenderedContract:
        return self._contract(state, block)

    def contract_since(
        self, before: RoutingState, state: RoutingState, block: int
    ) -> RenderedContract | None:
        """A whole-plan contract for an agent that keeps the one it got at ``before`` (``ContractDeltas``): the
        robots whose paths are the same there are written ``{"id": r}``, which the proposer reads as its kept
        robot. At k = 300 the whole contract is 78 KB and took a team agent 1.5-2.7 ms to parse (7 ms with
        Python's default garbage collector); between two of its leases a team of sixteen merges some tens of
        paths. None (written whole) for a lease of part of the plan: the agent's kept contract may not hold
        its robots."""
        if len(state.blocks[block]) != len(state.paths) or len(before.paths) != len(state.paths):
            return None
        return self._contract(state, block, held=before.paths)

    def _contract(
        self, state: RoutingState, block: int, held: tuple[Path, ...] | None = None
    ) -> RenderedContract:
        robots = state.blocks[block]
        opening = self._opening is not None and self._opening.open and len(robots) == len(state.paths)
        extra: dict[str, Any] = {}
        if opening:
            extra["search_seconds"] = OPENING_SECONDS  # an opening lease: answer soon (``opening.py``)
        if self.n_blocks > 1:
            extra["answer_on_gain"] = True  # others merge meanwhile (``RoutingProposer.answer_after``)
            if self.p.level_merges and len(robots) == len(state.paths):  # the plan walks with the team
                extra["answer_walk"] = True  # (``moves``): every search answers, gain or level,
                extra["search_seconds"] = WALK_SECONDS  # after a short walk
        return build_contract(
            self.inst, state.paths, robots, self.p.margin, self.weight, self._geometry, extra or None, held
        )

    def validate(self, block: int, value: Any) -> Proposed:
        if not 0 <= block < self.n_blocks:
            raise InvalidProposal(f"block {block} does not exist (0..{self.n_blocks - 1})", "wrong_block")
        if isinstance(value, Mapping):
            value = value.get("paths")
        if self.p.neighbourhood_leases:  # sizes change at every lease: the head's block says (``_changed``)
            if not isinstance(value, list | tuple) or not 0 < len(value) <= self.inst.n_robots:
                raise InvalidProposal(
                    f"block {block} needs a list of paths (one per robot, in contract order)", "bad_shape"
                )
        else:
            size = len(self.inst.blocks[block])
            if not isinstance(value, list | tuple) or len(value) != size:
                raise InvalidProposal(
                    f"block {block} needs a list of {size} paths (one per robot, in contract order)",
                    "bad_shape",
                )
        return tuple(None if raw is None else self._path(k, raw) for k, raw in enumerate(value))

    def _step(self, who: str, t: int, xy: Any, cells: list[int]) -> int:
        """Step ``t`` of a path (after ``cells``) checked one rule at a time: the cell, or what is wrong."""
        g = self.grid
        if (
            not isinstance(xy, list | tuple)
            or len(xy) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in xy)
        ):
            raise InvalidProposal(f"{who}: step {t} is not an [x, y] pair of integers", "bad_shape")
        x, y = xy
        if not g.inside(x, y):
            raise InvalidProposal(f"{who}: ({x}, {y}) at t={t} is off the map", "illegal_move")
        c = g.cell(x, y)
        if not g.free[c]:
            raise InvalidProposal(f"{who}: ({x}, {y}) at t={t} is blocked", "illegal_move")
        if cells and c not in g.moves(cells[-1]):
            raise InvalidProposal(
                f"{who}: jump from {g.xy(cells[-1])} to ({x}, {y}) at t={t}", "illegal_move"
            )
        return c

    def _path(self, position: int, raw: Any, robot: int | None = None) -> Path:
        """A legal path; with ``robot`` None, of whichever robot starts where it starts (see ``_changed``)."""
        g = self.grid
        who = f"path {position}" if robot is None else f"robot {robot}"
        if not isinstance(raw, list | tuple) or not raw:
            raise InvalidProposal(f"{who}: a path is a non-empty list of [x, y] cells", "bad_shape")
        if len(raw) > self.inst.max_len + 1:
            raise InvalidProposal(f"{who}: path longer than max_len {self.inst.max_len}", "over_budget")
        cells: list[int] = []
        width, height, free, moves = g.width, g.height, g.free, g.moves
        for t, xy in enumerate(raw):
            # the common case in a few exact tests (JSON gives lists of ints): a stale answer's paths were a
            # sixth of the coordinator's time at 16 agents with the checks below on every step
            if type(xy) is list and len(xy) == 2:
                x, y = xy
                if type(x) is int and type(y) is int and 0 <= x < width and 0 <= y < height:
                    c = y * width + x
                    if free[c] and (not cells or c in moves(cells[-1])):
                        cells.append(c)
                        continue
            cells.append(self._step(who, t, xy, cells))
        if robot is None:
            found = self._robot_of_start.get(cells[0])
            if found is None:
                raise InvalidProposal(
                    f"{who}: starts at {g.xy(cells[0])}, where no robot starts", "illegal_move"
                )
            robot, who = found, f"{who} (robot {found})"
        elif cells[0] != self.inst.starts[robot]:
            raise InvalidProposal(
                f"{who}: path starts at {g.xy(cells[0])}, not at {g.xy(self.inst.starts[robot])}",
                "illegal_move",
            )
        if cells[-1] != self.inst.goals[robot]:
            raise InvalidProposal(
                f"{who}: path ends at {g.xy(cells[-1])}, not at its goal {g.xy(self.inst.goals[robot])}",
                "illegal_move",
            )
        return canonical(cells)

    def encode_value(self, value: Proposed) -> list[list[list[int]] | None]:
        return [None if p is None else [list(self.grid.xy(c)) for c in p] for p in value]

    def scale(self) -> float:
        """The lower bound, known without planning: the default (|F| of the first plan) made every process
        that loads the task (API and engine workers) plan and repair the first plan again, for up to
        ``initial_repair`` seconds each, and the deadline made that plan differ between processes."""
        return max(1.0, float(self.lower_bound()))

    def lower_bound(self) -> int:
        """Σ 4-connected BFS distances (the scenario's octile lengths are not a bound here)."""
        g = self.grid
        return sum(g.distances(t)[s] for s, t in zip(self.inst.starts, self.inst.goals, strict=True))

    @cached_property
    def _reference(self) -> Reference:
        from tasks.routing.exact import exact_reference

        return exact_reference(self.inst, self.lower_bound(), self.p.exact_limit)

    def reference(self) -> Reference:
        return self._reference

    def feasible(self, state: RoutingState) -> bool:
        return state.conflicts == 0

    def dump_state(self, state: RoutingState) -> dict[str, Any]:
        """Paths as cell numbers (y x width + x): the store keeps or sends this at every commit, and as
        [x, y] pairs it was the coordinator's largest cost per commit at 300 robots (``solution`` keeps
        the pairs)."""
        kept = self._cells
        if kept is None or kept[0] is not state.paths:  # a lease's new blocks keep the paths: dumped once
            # a merge changes a few paths: the others' lists are the last dump's (stores copy or encode them)
            old_paths, old_cells = kept if kept is not None else ((), [])
            n = len(old_paths)
            cells = [
                old_cells[r] if r < n and p is old_paths[r] else list(p) for r, p in enumerate(state.paths)
            ]
            kept = self._cells = (state.paths, cells)
        return {"cells": kept[1], "blocks": [list(b) for b in state.blocks]}

    def load_state(self, data: Any) -> RoutingState:
        """A stored state: cell numbers (``dump_state``) or [x, y] pairs (``solution``, older stores)."""
        if isinstance(data, Mapping) and "cells" in data:
            raw = [self._pairs(r, p) for r, p in enumerate(data["cells"])]
        else:
            raw = data["paths"] if isinstance(data, Mapping) else data
        if len(raw) != self.inst.n_robots:
            raise InvalidProposal(f"state has {len(raw)} paths for {self.inst.n_robots} robots", "bad_shape")
        blocks = self._blocks(data.get("blocks") if isinstance(data, Mapping) else None)
        return self.state_of(tuple(self._path(r, p, robot=r) for r, p in enumerate(raw)), blocks)

    def _blocks(self, raw: Any) -> Blocks:
        """Stored blocks, checked: a partition of the robots with the instance's sizes; with neighbourhood
        leases, any sizes; with overlapping leases, any robots, each at most once in a block."""
        if raw is None:
            return self.inst.blocks
        blocks = tuple(tuple(int(r) for r in b) for b in raw)
        n = self.inst.n_robots
        members = [r for b in blocks for r in b]
        if self.p.lease_overlap:
            ok = len(blocks) == len(self.inst.blocks) and all(
                b and len(set(b)) == len(b) and all(0 <= r < n for r in b) for b in blocks
            )
        elif self.p.neighbourhood_leases:  # sizes change at every lease; the number of blocks does not
            ok = len(blocks) == len(self.inst.blocks) and all(blocks) and sorted(members) == list(range(n))
        else:
            ok = [len(b) for b in blocks] == [len(b) for b in self.inst.blocks] and sorted(members) == list(
                range(n)
            )
        if not ok:
            raise InvalidProposal(
                "state's blocks are not a partition of the robots with the instance's sizes"
                if not self.p.lease_overlap
                else f"state's blocks are not {len(self.inst.blocks)} non-empty sets of robots 0..{n - 1}",
                "bad_shape",
            )
        return blocks

    def _pairs(self, robot: int, cells: Any) -> list[Any]:
        """A stored path of cell numbers as [x, y] pairs, for ``_path`` to check."""
        if not isinstance(cells, list | tuple) or not all(
            isinstance(c, int) and not isinstance(c, bool) for c in cells
        ):
            raise InvalidProposal(f"robot {robot}: a stored path is a list of cell numbers", "bad_shape")
        return [list(self.grid.xy(c)) for c in cells]

    def solution(self, state: RoutingState) -> dict[str, Any]:
        return {
            "paths": [[list(self.grid.xy(c)) for c in p] for p in state.paths],
            "blocks": [list(b) for b in state.blocks],
            "sum_of_costs": state.soc,
            "conflicts": state.conflicts,
            "lower_bound": self.lower_bound(),
        }

    def view_model(self, state: RoutingState) -> dict[str, Any]:
        from tasks.routing.view import plan_view

        return plan_view(self.inst, state.paths, state.blocks, state.soc, self.lower_bound())

    @classmethod
    def view_renderer(cls) -> pathlib.Path:
        return pathlib.Path(__file__).with_name("view.js")

    def pictures(self, state: RoutingState, stem: str) -> list[str]:
        from tasks.routing.draw import draw_animation, draw_plan

        return [
            draw_plan(self.inst, state.paths, stem + "-plan.png"),
            draw_animation(self.inst, state.paths, stem + "-moves.gif"),
        ]

    def warm_up(self) -> None:
        """The compiled kernels (the agents' SIPP, the coordinator's counts), compiled or loaded from numba's
        cache before any search or scoring needs them."""
        sipp_jit.warm()
        plan_jit.warm_counts()

    def lag_rounds(self, knobs: BaseModel) -> int:
        """A randomized search that finds nothing in one budget may find something in the next."""
        return RoutingProposerParams.model_validate(knobs.model_dump()).patience

    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> RoutingProposer:
        k = RoutingProposerParams.model_validate(knobs.model_dump())
        return RoutingProposer(
            self.grid,
            time_budget=k.time_budget,
            neighbourhood=k.neighbourhood,
            max_len=self.inst.max_len,
            stop_after=k.stop_after,
            answer_after=k.answer_after,
            follow_every=k.follow_every,
            seed=seed,
            robots=self.inst.n_robots if k.keep_contract else 0,
        )


def _same_change(
    state: RoutingState, changes: list[tuple[int, Proposed]], on: RoutingState, now: Mapping[int, Proposed]
) -> bool:
    """Whether ``now`` on the plan ``on`` is that change on that plan: the very objects, not equal ones."""
    return (
        state is on
        and len(changes) == len(now)
        and all(b == b2 and v is v2 for (b, v), (b2, v2) in zip(changes, now.items(), strict=False))
    )
