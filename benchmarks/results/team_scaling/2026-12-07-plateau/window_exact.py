"""Does an exact repair of a few robots find what the LNS's walk does not? From a saved plan, repeatedly: a
delayed robot (the most delayed not tried since the plan last changed) and the robots met on random walks
along its way (``walk_from``, GROUP robots in all) are re-planned together by CP-SAT against every other
path as it is (vertex, swap and parking conflicts), each robot arriving by LATER steps after now at the latest
and by its share of a strict gain (the group's delays less one); optimal within those bounds, or the best
found in SOLVE_SECONDS. A solution is kept when it lowers the group's sum of costs; INFEASIBLE proves there is
no such gain within those bounds. Printed: the plan's sum of costs against process CPU (CP-SAT's included;
one worker), solves, gains.

Run from a checkout: PYTHONPATH=. python THIS PLAN.json CPU_SECONDS SEED GROUP [SOLVE_SECONDS [LATER]]
LATER (2): a robot of the group may arrive at most this much later than now (within the group's slack)."""

import json
import random
import sys
import time
from pathlib import Path

from lab import routing_config
from ortools.sat.python import cp_model

from tasks.registry import create_task
from tasks.routing.destroy import delays, walk_from
from tasks.routing.occupancy import OccupancyIndex, cost
from tasks.routing.reservations import Reservations

plan_file, cpu_limit, seed, group_size = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
solve_seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
LATER = int(sys.argv[6]) if len(sys.argv) > 6 else 2
"""How much later than now a robot of the group may arrive (the group's whole slack when smaller)."""
task = create_task("routing", dict(routing_config(16, 2, 0).params))
grid, inst = task.grid, task.inst
starts, goals = list(inst.starts), list(inst.goals)
n = grid.n_cells


class Window:
    """One CP-SAT model: the group's moves through a time-expanded grid, every other path fixed."""

    def __init__(self, others, horizon):
        self.vert, self.edge, self.park, self.visits = others.vert, others.edge, others.park, others.visits
        self.horizon = horizon
        self.m = cp_model.CpModel()
        self.moves, self.at, self.out = {}, {}, {}

    def free_at(self, t, v):
        if self.vert.get(t * n + v):
            return False
        pk = self.park.get(v)
        return pk is None or pk > t

    def move(self, k, t, u, v):
        var = self.m.new_bool_var("")
        self.moves[k, t, u, v] = var
        self.out.setdefault((k, t, u), []).append(var)
        self.at.setdefault((k, t + 1, v), []).append(var)

    def robot(self, k, r, due):
        """Robot ``r``'s moves (arriving by ``due``, then parked), its flow, and its cost terms."""
        s, g, horizon = starts[r], goals[r], self.horizon
        ds, dg = grid.distances(s), grid.distances(g)
        for u in (c for c in range(n) if grid.free[c] and 0 <= ds[c] and 0 <= dg[c] and ds[c] + dg[c] <= due):
            for t in range(ds[u], min(due - dg[u] + 1, horizon)):
                for v in grid.moves(u):
                    near = 0 <= ds[v] <= t + 1 and 0 <= dg[v] <= due - t - 1
                    if near and self.free_at(t + 1, v) and (v == u or not self.edge.get((t * n + v) * n + u)):
                        self.move(k, t, u, v)
        for t in range(due, horizon):  # parked at its goal until every robot of the group has arrived
            if self.free_at(t + 1, g) and (k, t, g, g) not in self.moves:
                self.move(k, t, g, g)
        if not self.out.get((k, 0, s)):
            return None
        m, at, out = self.m, self.at, self.out
        m.add(sum(out[k, 0, s]) == 1)
        nodes = {(t, v) for (kk, t, v) in at if kk == k} | {(t, u) for (kk, t, u) in out if kk == k and t > 0}
        for t, v in nodes:
            if t < horizon:
                m.add(sum(at.get((k, t, v), [])) == sum(out.get((k, t, v), [])))
        m.add(sum(at.get((k, horizon, g), [])) == 1)
        last_visit = max(self.visits.get(g, ()), default=-1)  # another robot passes there after we park
        done = {t: m.new_bool_var("") for t in range(ds[g], horizon)}
        for t in done:
            stay = self.moves.get((k, t, g, g))
            m.add(done[t] == 0) if stay is None or t <= last_visit else m.add_implication(done[t], stay)
            if t + 1 < horizon:
                m.add_implication(done[t], done[t + 1])
        return [done[t].Not() for t in done]

    def apart(self):
        """No two robots of the group in one cell at one time, nor swapping along one edge."""
        cells, swaps = {}, {}
        for (_k, t, v), inc in self.at.items():
            cells.setdefault((t, v), []).extend(inc)
        for (_k, t, u, v), var in self.moves.items():
            if u != v:
                swaps.setdefault((t, min(u, v), max(u, v)), []).append(var)
        for xs in [*cells.values(), *swaps.values()]:
            if len(xs) > 1:
                self.m.add(sum(xs) <= 1)

    def path(self, solver, k, r):
        c, path = starts[r], [starts[r]]
        for t in range(self.horizon):
            c = next(
                v
                for v in grid.moves(c)
                if (k, t, c, v) in self.moves and solver.value(self.moves[k, t, c, v])
            )
            path.append(c)
        while len(path) > 1 and path[-1] == path[-2]:
            path.pop()
        return tuple(path)


def solve(group, paths, others):
    """The group's paths of least sum of costs against ``others`` (a table without them), when below now."""
    dists = [grid.distances(goals[r])[starts[r]] for r in group]
    slack = sum(cost(paths[r]) for r in group) - sum(dists) - 1  # a strict gain or nothing
    if slack < 0:
        return None
    dues = [min(d + slack, cost(paths[r]) + LATER) for d, r in zip(dists, group, strict=True)]
    w = Window(others, max(dues))
    terms = []
    for k, r in enumerate(group):
        robot = w.robot(k, r, dues[k])
        if robot is None:
            return None
        terms += robot
    w.apart()
    w.m.minimize(sum(terms) + sum(dists))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = solve_seconds
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    if solver.solve(w.m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return {r: w.path(solver, k, r) for k, r in enumerate(group)}


paths = [tuple(p) for p in json.load(open(plan_file))["paths"]]
table = Reservations(n)
for p in paths:
    table.add_path(p)
rng = random.Random(seed)
tried: set[int] = set()
solves = gains = 0
t0 = time.process_time()
curve = [(0.0, sum(cost(p) for p in paths))]
while time.process_time() - t0 < cpu_limit:
    d = delays(grid, paths, starts, goals)
    order = [r for r in sorted(range(len(paths)), key=lambda r: -d[r]) if d[r] > 0 and r not in tried]
    if not order:
        tried.clear()
        continue
    pick = order[0]
    tried.add(pick)
    index = OccupancyIndex.build(n, dict(enumerate(paths)))
    group = walk_from(grid, paths[pick], goals[pick], [pick], group_size, rng, index)
    for r in group:
        table.remove_path(paths[r])
    found = solve(group, paths, table)
    solves += 1
    if found is not None and sum(cost(p) for p in found.values()) < sum(cost(paths[r]) for r in group):
        for r, p in found.items():
            paths[r] = p
        gains += 1
        tried.clear()
        curve.append((round(time.process_time() - t0, 2), sum(cost(p) for p in paths)))
    for r in group:
        table.add_path(paths[r])
check = Reservations(n)
clashes = 0
for p in paths:
    clashes += check.path_conflicts(p)
    check.add_path(p)
marks = [next((y for x, y in reversed(curve) if x <= t), None) for t in (5, 10, 20, 30, 60)]
print(
    f"seed {seed} group {group_size} later {LATER}: {solves} solves, {gains} gains, collisions {clashes}, "
    f"sum of costs at 5/10/20/30/60 s CPU {marks}",
    flush=True,
)
json.dump(
    {"curve": curve, "solves": solves, "gains": gains},
    open(f"window-exact-{Path(plan_file).stem}-{seed}-g{group_size}-l{LATER}.json", "w"),
)
