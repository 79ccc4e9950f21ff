"""Machine sequences -> semi-active schedule, makespan, critical path (the disjunctive graph).

A solution is one sequence of jobs per machine. With the jobs' routes, the
sequences define a precedence graph over operations; every operation starts as
soon as its job predecessor and its machine predecessor have ended. Sequences
that contradict the routes make the graph cyclic: the operations on or behind a
cycle cannot be scheduled and are counted as ``stuck``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from blockopt_jobshop.instances import Instance

Op = tuple[int, int]
"""(job, position in the job's route)."""


@dataclass(frozen=True)
class Schedule:
    start: dict[Op, int]
    makespan: int
    stuck: int
    """Operations that could not be scheduled because the sequences are cyclic."""
    critical: tuple[Op, ...]
    """A longest path, first operation first (empty when stuck)."""


def _graph(
    inst: Instance, sequences: Mapping[int, Sequence[int]]
) -> tuple[dict[Op, list[Op]], dict[Op, int]]:
    """Successors and in-degrees of the operations: job arcs, then each machine's sequence."""
    position = {(j, m): k for j, route in enumerate(inst.routes) for k, (m, _) in enumerate(route)}
    succ: dict[Op, list[Op]] = {}
    indegree: dict[Op, int] = {}
    for j, route in enumerate(inst.routes):
        for k in range(len(route)):
            indegree.setdefault((j, k), 0)
            if k:
                succ.setdefault((j, k - 1), []).append((j, k))
                indegree[(j, k)] += 1
    for m, seq in sequences.items():
        ops = [(j, position[(j, m)]) for j in seq]
        for a, b in zip(ops, ops[1:], strict=False):
            succ.setdefault(a, []).append(b)
            indegree[b] += 1
    return succ, indegree


def decode(inst: Instance, sequences: Mapping[int, Sequence[int]]) -> Schedule:
    succ, indegree = _graph(inst, sequences)
    start: dict[Op, int] = {}
    end: dict[Op, int] = {}
    why: dict[Op, Op | None] = {}
    ready = deque(op for op, n in indegree.items() if n == 0)
    for op in ready:
        start[op], why[op] = 0, None
    while ready:
        op = ready.popleft()
        end[op] = start[op] + inst.routes[op[0]][op[1]][1]
        for nxt in succ.get(op, ()):
            if end[op] >= start.get(nxt, 0):
                start[nxt], why[nxt] = end[op], op
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    stuck = len(indegree) - len(end)
    makespan = max(end.values(), default=0)
    critical: list[Op] = []
    if not stuck and end:
        last: Op | None = max(end, key=lambda o: end[o])
        while last is not None:
            critical.append(last)
            last = why[last]
    return Schedule(start, makespan, stuck, tuple(reversed(critical)))


def sequences_from_keys(inst: Instance, keys: Mapping[int, Sequence[float]]) -> dict[int, list[int]]:
    """Each machine's jobs in the order of their operations' keys (ties by job): the machine sequences
    a solution given as one key per operation stands for."""
    on: dict[int, list[tuple[float, int]]] = {}
    for j, route in enumerate(inst.routes):
        for k, (m, _) in enumerate(route):
            on.setdefault(m, []).append((keys[j][k], j))
    return {m: [j for _, j in sorted(ops)] for m, ops in on.items()}


def penalty_weight(inst: Instance) -> int:
    """More than any makespan (the sum of all durations), so one stuck operation outweighs any schedule."""
    return 1 + sum(d for route in inst.routes for _, d in route)


def objective(inst: Instance, sequences: Mapping[int, Sequence[int]]) -> float:
    """F = makespan of what can be scheduled + W x operations stuck behind a cycle."""
    s = decode(inst, sequences)
    return float(s.makespan + penalty_weight(inst) * s.stuck)


def flow_time(inst: Instance, sequences: Mapping[int, Sequence[int]]) -> int:
    """Sum of the jobs' completion times: a tie-breaker that tells apart schedules of equal makespan."""
    s = decode(inst, sequences)
    return sum(s.start.get((j, len(r) - 1), 0) + r[-1][1] for j, r in enumerate(inst.routes))


def critical_swaps(inst: Instance, schedule: Schedule, machines: set[int]) -> list[tuple[int, int, int]]:
    """(machine, job a, job b): adjacent operations of the critical path on one of ``machines`` (the N1
    neighbourhood of van Laarhoven et al.: swapping such a pair never creates a cycle)."""
    moves = []
    for a, b in zip(schedule.critical, schedule.critical[1:], strict=False):
        ma, mb = inst.routes[a[0]][a[1]][0], inst.routes[b[0]][b[1]][0]
        if ma == mb and ma in machines and a[0] != b[0]:
            moves.append((ma, a[0], b[0]))
    return moves
