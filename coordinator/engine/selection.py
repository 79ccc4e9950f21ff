"""Choosing which improving proposals to merge, on the interference graph (docs/architecture.md §4).

Nodes are proposal indices with weight ``"gain"`` (Δ_p); an edge carries the
measured interaction ``"c"`` (c_pq = Δ_p + Δ_q − Δ_pq), or ``"exclusive"`` when
the two can never be merged together (same block). These functions only pick
sets; the engine checks every combination against the exact objective.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from ortools.sat.python import cp_model

EXACT_LIMIT = 40
"""Components up to this many proposals are solved exactly (CP-SAT, to proven optimality)."""
SOLVER_SECONDS = 0.5
"""Time cap for one exact solve; hit only on hard components."""
LARGE_SECONDS = 0.05
"""Larger components: CP-SAT only polishes a local-search start for this long."""
ENUMERATE_LIMIT = 12
"""Components up to this many proposals are solved by enumerating every subset (2^12 = 4,096 rows of one numpy
product: well under a millisecond, where building and solving a CP-SAT model costs tens of milliseconds)."""
_SCALE = 1_000_000


def _scaled(values: list[float]) -> float:
    top = max((abs(v) for v in values), default=0.0)
    return _SCALE / top if top > 0 else 1.0


def _solve(model: cp_model.CpModel, seconds: float = SOLVER_SECONDS) -> cp_model.CpSolver | None:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return solver
    return None


def greedy_independent_set(graph: nx.Graph) -> set[int]:
    """Heaviest first, skipping neighbours of what was taken."""
    chosen: set[int] = set()
    blocked: set[int] = set()
    for node in sorted(graph.nodes, key=lambda n: (-graph.nodes[n]["gain"], n)):
        if node not in blocked:
            chosen.add(node)
            blocked.update(graph.neighbors(node))
    return chosen


def _best_subset(graph: nx.Graph, independent: bool) -> set[int]:
    """The exact best nonempty subset of a small graph by enumeration: the heaviest independent set, or the best
    pairwise-model value Σ Δ_p − Σ c_pq (never two ends of an exclusive edge)."""
    nodes = list(graph.nodes)
    index = {n: k for k, n in enumerate(nodes)}
    m = len(nodes)
    subsets = ((np.arange(1, 1 << m)[:, None] >> np.arange(m)) & 1).astype(bool)  # every nonempty subset
    value = subsets.astype(float) @ np.array([graph.nodes[n]["gain"] for n in nodes], dtype=float)
    for u, v, data in graph.edges(data=True):
        both = subsets[:, index[u]] & subsets[:, index[v]]
        if independent or data.get("exclusive"):
            value[both] = -np.inf
        else:
            value[both] -= data["c"]
    best = subsets[int(np.argmax(value))]
    return {nodes[k] for k in np.flatnonzero(best)}


def max_weight_independent_set(graph: nx.Graph) -> set[int]:
    """Exact per connected component of at most EXACT_LIMIT nodes (enumeration up to ENUMERATE_LIMIT, CP-SAT
    above); greedy beyond."""
    chosen: set[int] = set()
    for comp in nx.connected_components(graph):
        sub = graph.subgraph(comp)
        if len(comp) == 1:
            chosen |= set(comp)
        elif len(comp) <= ENUMERATE_LIMIT:
            chosen |= _best_subset(sub, independent=True)
        elif len(comp) <= EXACT_LIMIT:
            chosen |= _mwis_cpsat(sub)
        else:
            chosen |= greedy_independent_set(sub)
    return chosen


def _mwis_cpsat(graph: nx.Graph) -> set[int]:
    nodes = list(graph.nodes)
    factor = _scaled([graph.nodes[n]["gain"] for n in nodes])
    model = cp_model.CpModel()
    x = {n: model.new_bool_var(f"x{n}") for n in nodes}
    for u, v in graph.edges:
        model.add(x[u] + x[v] <= 1)
    greedy = greedy_independent_set(graph)
    for n in nodes:
        model.add_hint(x[n], n in greedy)
    model.maximize(sum(round(graph.nodes[n]["gain"] * factor) * x[n] for n in nodes))
    solver = _solve(model)
    if solver is None:
        return greedy
    return {n for n in nodes if solver.boolean_value(x[n])}


def pairwise_model_value(graph: nx.Graph, subset: set[int]) -> float:
    """Predicted combined improvement Σ Δ_p − Σ c_pq over the subset."""
    gain = sum(graph.nodes[n]["gain"] for n in subset)
    adjacency = graph.adj
    for u in subset:  # each edge inside the subset once (u < v): the subset's degrees, not a filtered view
        for v, data in adjacency[u].items():
            if v in subset and u < v:
                if data.get("exclusive"):
                    return float("-inf")
                gain -= data["c"]
    return gain


def _local_search(graph: nx.Graph) -> set[int]:
    """Best single, then flip single proposals while the pairwise model improves.

    Each node's marginal value Δ_n − Σ_{chosen q} c_nq is kept up to date along the flipped node's edges, so
    a flip costs its degree plus one argmax: linear per flip in a sparse graph (a dense c·chosen product
    per flip was O(n²)). An exclusive edge (same block) is a count of chosen exclusive neighbours.
    """
    nodes = list(graph.nodes)
    index = {n: k for k, n in enumerate(nodes)}
    gain = np.array([graph.nodes[n]["gain"] for n in nodes], dtype=float)
    adjacent: list[list[tuple[int, float]]] = [[] for _ in nodes]
    exclusive: list[list[int]] = [[] for _ in nodes]
    for u, v, data in graph.edges(data=True):
        a, b = index[u], index[v]
        if data.get("exclusive"):
            exclusive[a].append(b)
            exclusive[b].append(a)
        else:
            adjacent[a].append((b, data["c"]))
            adjacent[b].append((a, data["c"]))
    marginal = gain.copy()
    blocked = np.zeros(len(nodes), dtype=np.intp)
    chosen = np.zeros(len(nodes), dtype=bool)
    tolerance = 1e-12 * max(1.0, float(np.abs(gain).max()))

    def flip(k: int) -> None:
        sign = -1.0 if not chosen[k] else 1.0
        chosen[k] = not chosen[k]
        for other, c in adjacent[k]:
            marginal[other] += sign * c
        for other in exclusive[k]:
            blocked[other] -= int(sign)

    flip(int(np.argmax(gain)))
    while True:
        value = np.where(blocked > 0, -1e300, marginal)  # value of adding n (or, negated, of dropping it)
        delta = np.where(chosen, -value, value)
        best = int(np.argmax(delta))
        if delta[best] <= tolerance or (chosen.sum() == 1 and chosen[best]):
            break
        flip(best)
    return {nodes[k] for k in np.flatnonzero(chosen)}


def best_pairwise_combination(graph: nx.Graph) -> set[int]:
    """Maximize Σ Δ_p x_p − Σ c_pq x_p x_q over one component (a small pairwise selection).

    Products are linearized: y_pq ≥ x_p + x_q − 1 where c_pq > 0 (a penalty the
    solver wants to avoid), y_pq ≤ x_p, y_pq ≤ x_q where c_pq < 0 (a bonus).
    """
    nodes = list(graph.nodes)
    if len(nodes) == 1:
        return set(nodes)
    if len(nodes) <= ENUMERATE_LIMIT:
        return _best_subset(graph, independent=False)
    values = [graph.nodes[n]["gain"] for n in nodes]
    values += [d["c"] for _, _, d in graph.edges(data=True) if not d.get("exclusive")]
    factor = _scaled(values)
    model = cp_model.CpModel()
    x = {n: model.new_bool_var(f"x{n}") for n in nodes}
    terms = [round(graph.nodes[n]["gain"] * factor) * x[n] for n in nodes]
    for u, v, data in graph.edges(data=True):
        if data.get("exclusive"):
            model.add(x[u] + x[v] <= 1)
            continue
        c = round(data["c"] * factor)
        if c == 0:
            continue
        y = model.new_bool_var(f"y{u}_{v}")
        if c > 0:
            model.add(y >= x[u] + x[v] - 1)
        else:
            model.add(y <= x[u])
            model.add(y <= x[v])
        terms.append(-c * y)
    model.add(sum(x.values()) >= 1)
    start = _local_search(graph)
    for n in nodes:
        model.add_hint(x[n], n in start)
    model.maximize(sum(terms))
    solver = _solve(model, SOLVER_SECONDS if len(nodes) <= EXACT_LIMIT else LARGE_SECONDS)
    if solver is None:
        return start
    found = {n for n in nodes if solver.boolean_value(x[n])}
    return found if pairwise_model_value(graph, found) >= pairwise_model_value(graph, start) else start
