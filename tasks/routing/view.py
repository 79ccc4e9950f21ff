"""The routing panel of the web UI: the map, every robot's path (as cell ids) and the conflicts left."""

from __future__ import annotations

from typing import Any

from tasks.routing.draw import conflict_cells
from tasks.routing.instance import Instance
from tasks.routing.occupancy import Path


def plan_view(
    inst: Instance, paths: tuple[Path, ...], blocks: tuple[tuple[int, ...], ...], soc: int, lower_bound: int
) -> dict[str, Any]:
    """Cells are ``y * width + x``: a path of 400 robots stays a few hundred kilobytes of JSON."""
    return {
        "width": inst.grid.width,
        "height": inst.grid.height,
        "rows": inst.grid.rows(),
        "paths": [list(p) for p in paths],
        "blocks": [list(b) for b in blocks],
        "goals": list(inst.goals),
        "conflicts": [list(c) for c in conflict_cells(inst, paths)],
        "sum_of_costs": soc,
        "lower_bound": lower_bound,
    }
