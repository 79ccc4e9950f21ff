"""The contract of a block: its robots and the other robots' paths where they can matter.

"Where they can matter" is the block's bounding region (starts, goals and
current paths, widened by a margin) during the block's time window (its
longest current path plus slack); visits to the block's goal cells are kept at
any time, because a robot parked there conflicts with every later visit.
The region's obstacle cells are listed too: a model that only sees the map's
name could not keep its paths off the walls (the heuristic knows the grid).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping
from typing import Any

from tasks.base import RenderedContract
from tasks.routing.grid import Grid
from tasks.routing.instance import Instance
from tasks.routing.occupancy import Path


def region_of(
    inst: Instance, robots: tuple[int, ...], paths: tuple[Path, ...], margin: int
) -> tuple[int, int, int, int]:
    """The bounding box of the robots' paths, widened by ``margin`` and clipped to the map: the definition
    (``GeometryCache.region`` gets it from the paths' cached boxes)."""
    w = inst.grid.width
    xs: list[int] = []
    ys: list[int] = []
    for r in robots:
        for c in paths[r]:
            xs.append(c % w)
            ys.append(c // w)
    return (
        max(0, min(xs) - margin),
        max(0, min(ys) - margin),
        min(inst.grid.width - 1, max(xs) + margin),
        min(inst.grid.height - 1, max(ys) + margin),
    )


Geometry = tuple[Path, list[list[int]], tuple[int, int, int, int], str]
"""A path, its cells as [x, y] pairs, its bounding box (x0, y0, x1, y1) and the pairs' JSON text."""


class GeometryCache:
    """Per robot, its path's [x, y] cells, bounding box and JSON text, recomputed only when the path changes.

    Between two contracts only the merged blocks' paths change (the plan's other path tuples are the
    same objects), so a contract costs the changed paths plus one lookup per other robot instead of a
    division per cell of the whole plan; a path wholly inside the region and window is one run, shared.
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self.entries: dict[int, Geometry] = {}
        self._heads: dict[int, str] = {}
        self._kept_entries: list[tuple[dict[str, Any], str]] = []
        self._leased: dict[tuple[int, ...], LeasedRobots] = {}
        self._lock = threading.Lock()
        self._obstacles: dict[tuple[int, int, int, int], tuple[list[list[int]], str]] = {}

    def get(self, robot: int, path: Path) -> Geometry:
        got = self.entries.get(robot)
        if got is not None and got[0] is path:
            return got
        w = self.width
        xy = [[c % w, c // w] for c in path]
        xs = [x for x, _ in xy]
        ys = [y for _, y in xy]
        got = self.entries[robot] = (path, xy, (min(xs), min(ys), max(xs), max(ys)), _dumps(xy))
        return got

    def robot_head(self, inst: Instance, robot: int) -> str:
        """The constant start of a robot's entry in a contract's text, up to its path: writing its start and
        goal with ``json.dumps`` was 60 % of a whole-plan contract (300 robots, 2.7 ms)."""
        got = self._heads.get(robot)
        if got is None:
            xy = inst.grid.xy
            start, goal = _dumps(list(xy(inst.starts[robot]))), _dumps(list(xy(inst.goals[robot])))
            got = self._heads[robot] = f'{{"id":{robot},"start":{start},"goal":{goal},"path":'
        return got

    def leased(
        self, inst: Instance, robots: tuple[int, ...], paths: tuple[Path, ...], margin: int
    ) -> tuple[list[dict[str, Any]], list[str], tuple[int, int, int, int]]:
        """The contract's robots (objects and JSON texts) and region for ``robots`` on ``paths``, brought up to
        date from the last contract of the same robots: only the robots whose path is not the same object are
        rendered again. A team's every lease holds the whole plan, and between two of them a merge or two
        changed some 14 of 300 paths: a whole-plan contract at k = 300 costs 0.77 ms instead of 1.65
        (``benchmarks.routing contract``). Locked: a contract may be built in a worker thread
        (``steps.kind_call``)."""
        with self._lock:
            got = self._leased.get(robots)
            if got is None:
                if len(self._leased) >= 16:  # leases of a fifth are drawn anew each time: keep a few
                    self._leased.clear()
                got = self._leased[robots] = LeasedRobots(self, inst, robots, paths)
            else:
                got.follow(self, inst, paths)
            return list(got.data), list(got.texts), got.region(inst.grid, margin)

    def kept_entries(self, robots: int) -> list[tuple[dict[str, Any], str]]:
        """Robot r's entry in a contract written since one the agent keeps, where its path is the same: its
        id alone (object and JSON text, made once: most of a whole-plan contract's 300 entries are these)."""
        if len(self._kept_entries) < robots:
            self._kept_entries = [({"id": r}, f'{{"id":{r}}}') for r in range(robots)]
        return self._kept_entries

    def entry(
        self, inst: Instance, robot: int, path: Path
    ) -> tuple[dict[str, Any], str, tuple[int, int, int, int]]:
        """A robot's entry in a contract's ``robots`` (its object and JSON text) and its path's box."""
        _, xy, box, text = self.get(robot, path)
        grid = inst.grid
        data = {
            "id": robot,
            "start": list(grid.xy(inst.starts[robot])),
            "goal": list(grid.xy(inst.goals[robot])),
            "path": xy,
        }
        return data, f"{self.robot_head(inst, robot)}{text}}}", box

    def obstacles(self, grid: Grid, region: tuple[int, int, int, int]) -> tuple[list[list[int]], str]:
        """The region's blocked cells as [x, y] pairs, and their JSON text, kept per region (most leases'
        region is the map)."""
        got = self._obstacles.get(region)
        if got is None:
            x0, y0, x1, y1 = region
            w = grid.width
            cells = [[x, y] for y in range(y0, y1 + 1) for x in range(x0, x1 + 1) if not grid.free[y * w + x]]
            got = (cells, _dumps(cells))
            if len(self._obstacles) >= 64:
                self._obstacles.clear()
            self._obstacles[region] = got
        return got


class LeasedRobots:
    """The robots of one lease as its last contract wrote them: each robot's entry (object and JSON text) and
    box, with the paths they were made from."""

    def __init__(
        self, cache: GeometryCache, inst: Instance, robots: tuple[int, ...], paths: tuple[Path, ...]
    ) -> None:
        self.robots = robots
        self.paths = paths
        entries = [cache.entry(inst, r, paths[r]) for r in robots]
        self.data = [e[0] for e in entries]
        self.texts = [e[1] for e in entries]
        self.boxes = [e[2] for e in entries]

    def follow(self, cache: GeometryCache, inst: Instance, paths: tuple[Path, ...]) -> None:
        """Brings the entries to ``paths``: a robot whose path is the same object keeps its entry."""
        if paths is self.paths:
            return
        before = self.paths
        for i, r in enumerate(self.robots):
            if paths[r] is not before[r]:
                self.data[i], self.texts[i], self.boxes[i] = cache.entry(inst, r, paths[r])
        self.paths = paths

    def region(self, grid: Grid, margin: int) -> tuple[int, int, int, int]:
        """``region_of`` from the paths' boxes: reading every cell of a 60-robot lease's paths took 0.8 ms a
        lease under the profiler (docs/notes/2026-12-05-lease-costs.md)."""
        boxes = self.boxes
        return (
            max(0, min(b[0] for b in boxes) - margin),
            max(0, min(b[1] for b in boxes) - margin),
            min(grid.width - 1, max(b[2] for b in boxes) + margin),
            min(grid.height - 1, max(b[3] for b in boxes) + margin),
        )


def _clip(
    o: int,
    path: Path,
    xy: list[list[int]],
    region: tuple[int, int, int, int],
    window: int,
    goals: set[int],
    moves: list[list[Any]],
) -> int:
    """The runs of ``path`` inside the region and window (or on the block's goals at any time)."""
    x0, y0, x1, y1 = region
    last = len(path) - 1
    run: list[list[int]] = []
    t0 = size = 0
    for t, c in enumerate(path):
        x, y = xy[t]
        if x0 <= x <= x1 and y0 <= y <= y1 and (t <= window or c in goals):
            if not run:
                t0 = t
            run.append(xy[t])
        elif run:
            moves.append([o, t0, run, 0])
            size += len(run)
            run = []
    if run:
        moves.append([o, t0, run, 1 if t0 + len(run) - 1 == last else 0])
        size += len(run)
    return size


def build_contract(
    inst: Instance,
    paths: tuple[Path, ...],
    robots: tuple[int, ...],
    margin: int,
    weight: int,
    cache: GeometryCache | None = None,
    extra: Mapping[str, Any] | None = None,
    held: tuple[Path, ...] | None = None,
) -> RenderedContract:
    """The contract of ``robots`` (plus ``extra``'s keys), with its JSON text made of the paths' kept texts:
    only the runs cut at the region or window are rendered anew. With ``held`` (the plan of a contract the
    agent keeps, which held every robot), a robot whose path is the same there is written ``{"id": r}``."""
    grid = inst.grid
    cache = cache if cache is not None else GeometryCache(grid.width)
    mine = set(robots)
    mine_data, mine_texts, (x0, y0, x1, y1) = cache.leased(inst, robots, paths, margin)
    if held is not None:
        ids_only = cache.kept_entries(len(paths))
        for i, r in enumerate(robots):
            now, then = paths[r], held[r]
            if now is then or now == then:
                mine_data[i], mine_texts[i] = ids_only[r]
    window = max(len(paths[r]) for r in robots) + 2 * margin + 8
    goals = {inst.goals[r] for r in robots}

    moves: list[list[Any]] = []
    texts: list[str] = []
    size = total = 0
    for o, path in enumerate(paths):
        if o in mine:
            continue
        total += len(path)
        _, xy, (bx0, by0, bx1, by1), text = cache.get(o, path)
        if bx1 < x0 or bx0 > x1 or by1 < y0 or by0 > y1:
            continue  # never in the region
        if x0 <= bx0 and bx1 <= x1 and y0 <= by0 and by1 <= y1 and len(path) - 1 <= window:
            moves.append([o, 0, xy, 1])  # wholly inside: one run, ending on arrival
            texts.append(f"[{o},0,{text},1]")
            size += len(xy)
            continue
        first = len(moves)
        size += _clip(o, path, xy, (x0, y0, x1, y1), window, goals, moves)
        texts.extend(_dumps(m) for m in moves[first:])
    obstacles, obstacles_text = cache.obstacles(grid, (x0, y0, x1, y1))
    data: dict[str, Any] = {
        "kind": "routing",
        "map": grid.name,
        "width": grid.width,
        "height": grid.height,
        "conflict_weight": weight,
        "max_len": inst.max_len,
        "robots": mine_data,
        "region": [x0, y0, x1, y1],
        "obstacles": obstacles,
        "window": [0, window],
        "reservations": {
            "moves": moves,
            "size": size,
            "plan_size": total,
            "format": "[robot, t0, [[x, y] at t0, t0+1, ...], 1 if the run ends on arrival at the robot's goal]",
        },
        "surrogate": "minimize sum of arrival times + conflict_weight x (conflicts inside the block + with reservations)",
        "value_format": "one path per robot, in the order of 'robots': [[x, y] at t = 0, 1, ...], ending at the goal;"
        " null keeps the robot's current path",
        **(extra or {}),
    }
    kept = {
        "robots": "[" + ",".join(mine_texts) + "]",
        "obstacles": obstacles_text,
        "reservations": '{"moves":['
        + ",".join(texts)
        + "],"
        + _dumps({k: v for k, v in data["reservations"].items() if k != "moves"})[1:],
    }
    return RenderedContract(data, _render(data, kept))


def _render(data: Mapping[str, Any], kept: Mapping[str, str]) -> str:
    """``data``'s JSON text, with the values of ``kept``'s keys taken from it as they are."""
    return "{" + ",".join(f"{_dumps(k)}:{kept.get(k) or _dumps(v)}" for k, v in data.items()) + "}"


_dumps = functools.partial(json.dumps, separators=(",", ":"), ensure_ascii=False)
"""Compact JSON, as pydantic writes it."""
