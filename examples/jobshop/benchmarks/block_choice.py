"""Why a block is a group of jobs: machine groups stop where job groups still improve (ft06).

The schedule below is where 3 agents owning pairs of machines (an earlier version of
this kind) stopped on ft06, at makespan 59. For every set of k machines, and every set
of k jobs, CP-SAT finds the best schedule that changes only those (the other machines'
orders, or the other jobs' relative orders, fixed): the best a block of that shape
could ever propose from here. Run: ``python examples/jobshop/benchmarks/block_choice.py``.
"""

from __future__ import annotations

import itertools
import json

from ortools.sat.python import cp_model

from blockopt_jobshop.instances import load

STOPPED_AT_59 = {
    0: [0, 3, 2, 1, 5, 4],
    1: [1, 0, 3, 4, 5, 2],
    2: [0, 2, 1, 4, 3, 5],
    3: [2, 0, 3, 5, 1, 4],
    4: [1, 0, 4, 2, 3, 5],
    5: [2, 0, 1, 5, 4, 3],
}


def best_with_free(free_machines: set[int], free_jobs: set[int]) -> int:
    inst = load("ft06")
    model = cp_model.CpModel()
    horizon = sum(d for r in inst.routes for _, d in r)
    start, end, on = {}, {}, {}
    for j, route in enumerate(inst.routes):
        for k, (m, d) in enumerate(route):
            start[j, m] = model.new_int_var(0, horizon, "")
            end[j, m] = model.new_int_var(0, horizon, "")
            on.setdefault(m, []).append(model.new_interval_var(start[j, m], d, end[j, m], ""))
            if k:
                model.add(start[j, m] >= end[j, route[k - 1][0]])
    for m, seq in STOPPED_AT_59.items():
        model.add_no_overlap(on[m])
        if m not in free_machines:
            kept = [j for j in seq if j not in free_jobs]
            for a, b in itertools.pairwise(kept):
                model.add(start[b, m] >= end[a, m])
    makespan = model.new_int_var(0, horizon, "")
    model.add_max_equality(makespan, [end[j, r[-1][0]] for j, r in enumerate(inst.routes)])
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.solve(model)
    return int(solver.objective_value)


def main() -> None:
    rows = {}
    for k in (1, 2, 3):
        groups = [set(g) for g in itertools.combinations(range(6), k)]
        rows[f"{k} machines"] = min(best_with_free(g, set()) for g in groups)
        rows[f"{k} jobs"] = min(best_with_free(set(), g) for g in groups)
    print(json.dumps({"start": 59, "optimum": 55, "best_block_move": rows}, indent=1))


if __name__ == "__main__":
    main()
