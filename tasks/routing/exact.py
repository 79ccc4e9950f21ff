"""The reference: Σ BFS distances, or the exact optimum of small instances by CP-SAT.

The CP-SAT model is a time-expanded graph: one move variable per robot, step
and grid edge (waits included), flow conservation, one robot per cell and
time, no swaps, and a "done" chain whose zeros count the arrival time. An
upper bound UB from prioritized planning bounds every robot's delay: in any
plan of cost ≤ UB, robot r arrives by d_r + (UB − LB), so restricting robot r
to cells it can reach and leave in time loses no better plan, and an OPTIMAL
status from CP-SAT proves the global optimum. Labelled "optimum" only then.
"""

from __future__ import annotations

from dataclasses import replace
from importlib.metadata import version
from typing import Any

from ortools.sat.python import cp_model

from tasks.base import Reference
from tasks.routing.astar import plan_path
from tasks.routing.instance import Instance
from tasks.routing.occupancy import Path
from tasks.routing.reservations import Reservations

MAX_ROBOTS = 10
MAX_CELLS = 256
SOLVER = f"ortools CP-SAT {version('ortools')}"
WORKERS = 2
"""Fixed, with the seed (CP-SAT's own default): within a time limit, what CP-SAT proves depends on both."""
SEED = 1


def small_enough(inst: Instance) -> bool:
    return inst.n_robots <= MAX_ROBOTS and inst.grid.n_cells <= MAX_CELLS


def solve_with_slack(
    inst: Instance, slack: int, time_limit: float, hint: list[Path] | None = None
) -> tuple[int | None, bool, list[list[int]]]:
    """(cost, proven optimal, paths) over plans where each robot arrives at most ``slack`` late.

    ``hint`` (a conflict-free plan within the slack) seeds the search.
    """
    g = inst.grid
    dists = [g.distances(goal)[s] for s, goal in zip(inst.starts, inst.goals, strict=True)]
    horizon = max(dists) + slack
    m = cp_model.CpModel()
    at: dict[tuple[int, int, int], list[cp_model.IntVar]] = {}  # (r, t, v) -> incoming moves
    out: dict[tuple[int, int, int], list[cp_model.IntVar]] = {}  # (r, t, v) -> outgoing moves
    moves: dict[tuple[int, int, int, int], cp_model.IntVar] = {}
    cost_terms: list[Any] = []
    offset = 0
    for r, (s, goal) in enumerate(zip(inst.starts, inst.goals, strict=True)):
        ds, dg = g.distances(s), g.distances(goal)
        due = dists[r] + slack

        def ok(t: int, v: int, ds: list[int] = ds, dg: list[int] = dg, due: int = due) -> bool:
            return 0 <= ds[v] <= t and 0 <= dg[v] <= max(0, due - t)

        for t in range(horizon):
            for u in range(g.n_cells):
                if not g.free[u] or not ok(t, u):
                    continue
                for v in g.moves(u):
                    if ok(t + 1, v):
                        var = m.new_bool_var(f"m{r}_{t}_{u}_{v}")
                        moves[r, t, u, v] = var
                        out.setdefault((r, t, u), []).append(var)
                        at.setdefault((r, t + 1, v), []).append(var)
        m.add(sum(out.get((r, 0, s), [])) == 1)
        for t in range(1, horizon):
            for v in range(g.n_cells):
                inc, outg = at.get((r, t, v), []), out.get((r, t, v), [])
                if inc or outg:
                    m.add(sum(inc) == sum(outg))
        m.add(sum(at.get((r, horizon, goal), [])) == 1)
        # done[t] = parked at the goal from t on; cost = number of steps not done
        d = ds[goal]
        done = {t: m.new_bool_var(f"d{r}_{t}") for t in range(d, horizon)}
        for t in range(d, horizon):
            stay: cp_model.IntVar | None = moves.get((r, t, goal, goal))
            if stay is None:
                m.add(done[t] == 0)
            else:
                m.add_implication(done[t], stay)
            if t + 1 < horizon:
                m.add_implication(done[t], done[t + 1])
        cost_terms.extend(done[t].Not() for t in range(d, horizon))
        offset += d  # the steps before d can never be done
    for t in range(1, horizon + 1):
        for v in range(g.n_cells):
            occ = [x for r in range(inst.n_robots) for x in at.get((r, t, v), [])]
            if len(occ) > 1:
                m.add(sum(occ) <= 1)
    for t in range(horizon):
        for u in range(g.n_cells):
            for v in g.moves(u):
                if u < v:
                    swap = [
                        moves[k]
                        for r in range(inst.n_robots)
                        for k in ((r, t, u, v), (r, t, v, u))
                        if k in moves
                    ]
                    if len(swap) > 1:
                        m.add(sum(swap) <= 1)
    m.add(sum(cost_terms) + offset <= sum(dists) + slack)
    m.minimize(sum(cost_terms) + offset)
    if hint:
        for r, hinted in enumerate(hint):
            cells = list(hinted) + [hinted[-1]] * (horizon + 1 - len(hinted))
            for t in range(horizon):
                step = moves.get((r, t, cells[t], cells[t + 1]))
                if step is not None:
                    m.add_hint(step, 1)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, time_limit)
    solver.parameters.num_workers = WORKERS
    solver.parameters.random_seed = SEED
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, False, []
    paths: list[list[int]] = []
    for r, s in enumerate(inst.starts):
        c = s
        path = [s]
        for t in range(horizon):
            c = next(v for v in g.moves(c) if (r, t, c, v) in moves and solver.value(moves[r, t, c, v]))
            path.append(c)
        paths.append(path)
    return int(round(solver.objective_value)), status == cp_model.OPTIMAL, paths


def prioritized_plan(inst: Instance) -> list[Path] | None:
    """A conflict-free prioritized plan (robots in order), or None if it has conflicts."""
    g = inst.grid
    table = Reservations(g.n_cells)
    plan: list[Path] = []
    conflicts = 0
    for s, goal in zip(inst.starts, inst.goals, strict=True):
        found = plan_path(g, s, goal, table, inst.max_len)
        if found is None:
            return None
        path, c = found
        conflicts += c
        plan.append(path)
        table.add_path(path)
    return plan if conflicts == 0 else None


def exact_optimum(inst: Instance, lower_bound: int, time_limit: float) -> tuple[int | None, bool]:
    """(best cost found, proven optimal) within ``time_limit`` seconds."""
    plan = prioritized_plan(inst)
    if plan is None:
        return None, False
    upper = sum(len(p) - 1 for p in plan)
    if upper == lower_bound:
        return upper, True
    value, optimal, _ = solve_with_slack(inst, upper - lower_bound, time_limit, plan)
    return value, optimal


def exact_reference(inst: Instance, lower_bound: int, time_limit: float) -> Reference:
    """The optimum when CP-SAT proves it within ``time_limit`` on a small instance, else the lower bound."""
    bound = Reference(
        float(lower_bound), "lower_bound", method="sum of individual shortest paths", proven=True
    )
    if time_limit > 0 and small_enough(inst):
        value, proven = exact_optimum(inst, lower_bound, time_limit)
        if value is not None and proven:
            return Reference(
                float(value),
                "optimum",
                method="CP-SAT on the time-expanded graph"
                if value != lower_bound
                else "a prioritized plan as long as the lower bound",
                solver=SOLVER,
                workers=WORKERS,
                seed=SEED,
                time_limit=time_limit,
                proven=True,
            )
        return replace(bound, method=f"{bound.method} (CP-SAT proved no optimum in {time_limit:g} s)")
    return bound
