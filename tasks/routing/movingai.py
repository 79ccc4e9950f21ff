"""MovingAI benchmark files: ``.map`` grids and ``.scen`` scenarios (first k lines = k robots).

A name without a path separator is looked up among the bundled files in
``tasks/data/mapf``; anything else is read as a path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tasks.routing.grid import Grid

DATA = Path(__file__).resolve().parent.parent / "data" / "mapf"


class BadInstance(ValueError):
    """An instance file or name that cannot be used; the message names the problem."""

    def __init__(self, param: str, reason: str) -> None:
        super().__init__(reason)
        self.param = param
        self.reason = reason


@dataclass(frozen=True)
class Agent:
    start: tuple[int, int]
    goal: tuple[int, int]


def bundled_maps() -> list[str]:
    return sorted(p.stem for p in (DATA / "maps").glob("*.map"))


def bundled_scenarios() -> list[str]:
    return sorted(p.stem for p in (DATA / "scen").glob("*.scen"))


def resolve_map(name: str) -> Path:
    if "/" not in name and not name.endswith(".map"):
        path = DATA / "maps" / f"{name}.map"
        if not path.is_file():
            raise BadInstance(
                "map", f"unknown map '{name}' (bundled: {', '.join(bundled_maps())}; or give a path)"
            )
        return path
    path = Path(name)
    if not path.is_file():
        raise BadInstance("map", f"map file '{name}' does not exist")
    return path


def resolve_scen(name: str, map_name: str) -> Path:
    """``random-1`` (for the given map), ``<map>-random-1`` (bundled) or a path."""
    if "/" not in name and not name.endswith(".scen"):
        for stem in (f"{map_name}-{name}", name):
            path = DATA / "scen" / f"{stem}.scen"
            if path.is_file():
                return path
        raise BadInstance(
            "scen",
            f"unknown scenario '{name}' for map '{map_name}' (bundled: {', '.join(bundled_scenarios())})",
        )
    path = Path(name)
    if not path.is_file():
        raise BadInstance("scen", f"scenario file '{name}' does not exist")
    return path


def parse_map(text: str, name: str) -> Grid:
    lines = [ln.rstrip("\r") for ln in text.splitlines()]
    header: dict[str, str] = {}
    i = 0
    while i < len(lines) and lines[i].strip() != "map":
        parts = lines[i].split()
        if len(parts) == 2:
            header[parts[0]] = parts[1]
        i += 1
    try:
        height, width = int(header["height"]), int(header["width"])
    except (KeyError, ValueError):
        raise BadInstance(
            "map", f"map '{name}': header needs 'height H' and 'width W' before 'map'"
        ) from None
    rows = lines[i + 1 : i + 1 + height]
    if len(rows) != height or any(len(r) < width for r in rows):
        raise BadInstance("map", f"map '{name}': expected {height} rows of {width} characters")
    return Grid.from_rows([r[:width] for r in rows], name)


def load_map(name: str) -> Grid:
    path = resolve_map(name)
    return parse_map(path.read_text(), path.stem)


def parse_scen(text: str, grid: Grid, k: int, name: str) -> list[Agent]:
    """The first ``k`` agents; each start and goal must be a free cell of ``grid``."""
    agents: list[Agent] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if lineno == 1 and line.startswith("version"):
            continue
        if not line.strip():
            continue
        f = line.split("\t") if "\t" in line else line.split()
        if len(f) < 8:
            raise BadInstance("scen", f"scenario '{name}' line {lineno}: expected 9 fields, got {len(f)}")
        try:
            sx, sy, gx, gy = (int(v) for v in f[4:8])
        except ValueError:
            raise BadInstance(
                "scen", f"scenario '{name}' line {lineno}: coordinates must be integers"
            ) from None
        for x, y in ((sx, sy), (gx, gy)):
            if not grid.inside(x, y) or not grid.free[grid.cell(x, y)]:
                raise BadInstance(
                    "scen", f"scenario '{name}' line {lineno}: ({x}, {y}) is not a free cell of the map"
                )
        agents.append(Agent((sx, sy), (gx, gy)))
        if len(agents) == k:
            return agents
    raise BadInstance("robots", f"scenario '{name}' has only {len(agents)} agents, {k} requested")


def load_scen(name: str, map_name: str, grid: Grid, k: int) -> list[Agent]:
    path = resolve_scen(name, map_name)
    return parse_scen(path.read_text(), grid, k, path.stem)
