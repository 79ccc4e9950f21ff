"""What this folder's scripts share: a replay of the k = 300 instance, and reading a curve.

The scripts run as files (`python $H/NAME.py`), so this module is found beside them."""

from typing import Any

Q = {1: 7152, 2: 7127, 3: 7118}  # BENCHMARKS "Team scaling": one agent at 120 s, median of 3 runs per seed


def to(curve: list, q: float) -> float | None:
    """When the head first reached ``q`` (None: never)."""
    return next((round(x, 1) for x, y in curve if y <= q), None)


def at(curve: list, t: float) -> float | None:
    """The head at time ``t``."""
    return next((y for x, y in reversed(curve) if x <= t), None)


def routing_config(agents: int, seed: int, seconds: float) -> Any:
    """The replay config of BENCHMARKS' team-scaling runs: random-32-32-10, 300 robots, a team's blocks."""
    from benchmarks.lib import virtual_team as vt
    from tasks.routing.task import RoutingTask

    params = {
        "blocks": RoutingTask.team_defaults(agents, "async")["blocks"],
        "map": "random-32-32-10",
        "robots": 300,
        "seed": seed,
    }
    return vt.ReplayConfig(kind="routing", params=params, agents=agents, seconds=seconds, seed=seed)
