"""The reference: CP-SAT on the disjunctive model (optimum when proven, else its best bound)."""

from __future__ import annotations

from importlib.metadata import version

from ortools.sat.python import cp_model

from blockopt_jobshop.instances import Instance

SOLVER = f"ortools CP-SAT {version('ortools')}"
WORKERS = 1
"""Fixed, with the seed (CP-SAT's own default): within a time limit, what CP-SAT proves depends on both."""
SEED = 1


def solve(inst: Instance, seconds: float, workers: int = WORKERS, seed: int = SEED) -> tuple[int, int, bool]:
    """(best makespan found, best lower bound, proven optimal) within ``seconds``."""
    model = cp_model.CpModel()
    horizon = sum(d for route in inst.routes for _, d in route)
    ends: list[cp_model.IntVar] = []
    by_machine: dict[int, list[cp_model.IntervalVar]] = {}
    for j, route in enumerate(inst.routes):
        previous: cp_model.IntVar | None = None
        for k, (m, d) in enumerate(route):
            s = model.new_int_var(0, horizon, f"s{j}_{k}")
            e = model.new_int_var(0, horizon, f"e{j}_{k}")
            by_machine.setdefault(m, []).append(model.new_interval_var(s, d, e, f"i{j}_{k}"))
            if previous is not None:
                model.add(s >= previous)
            previous = e
        if previous is not None:
            ends.append(previous)
    for intervals in by_machine.values():
        model.add_no_overlap(intervals)
    makespan = model.new_int_var(0, horizon, "makespan")
    model.add_max_equality(makespan, ends)
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return horizon, inst.trivial_bound(), False
    bound = max(int(round(solver.best_objective_bound)), inst.trivial_bound())
    return int(solver.objective_value), bound, status == cp_model.OPTIMAL
