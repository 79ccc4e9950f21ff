"""The routing kind: multi-robot path finding (docs/architecture.md §3 "routing").

Modules, one job each: ``grid`` (map, BFS), ``movingai`` (file loading),
``generate`` (random instances), ``instance`` (params -> instance),
``partition`` (blocks), ``occupancy`` (space-time index, scoring),
``validator`` (independent checker), ``reservations`` + ``astar`` + ``lns``
(the heuristic proposer), ``contract``, ``exact`` (CP-SAT reference),
``draw`` (pictures), ``task`` (the Task protocol).
"""

from __future__ import annotations

from tasks.routing.task import RoutingProposerParams, RoutingState, RoutingTask

TASK = RoutingTask

__all__ = ["TASK", "RoutingProposerParams", "RoutingState", "RoutingTask"]
