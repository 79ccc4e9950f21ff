"""Choosing which improving proposals to merge, on the interference graph (DESIGN §5).

Nodes are proposal indices with weight ``gain`` (Δ_p); an edge carries the measured interaction
c_pq = Δ_p + Δ_q − Δ_pq, or ``EXCLUSIVE`` (None) when the two can never be merged together (same
block). These functions only pick sets; the engine checks every combination against the exact objective.

The graph is plain dicts (``InterferenceGraph``), built once per round from ``candidate_pairs``: networkx
cost 1.9 ms per 64-proposal round to build and walk (2,016 edges added one by one, views filtered on every
pass). Nodes, neighbours, components and component subgraphs iterate in the order networkx 3 gave them,
so every choice is unchanged, ties, CP-SAT model order and float summation order included
(tests/test_selection_equivalence.py runs both on random graphs).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

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


EXCLUSIVE = None
"""An edge's interaction when the two proposals are for one block: never merged together."""


@dataclass
class InterferenceGraph:
    """Proposals (nodes) and their interactions (edges), as adjacency dicts.

    ``adj[u][v]`` is c_uv, or ``EXCLUSIVE``; each node's neighbours are in the order their edges were added
    (as networkx keeps them), and ``nodes`` in the order they were added.
    """

    nodes: list[int]
    gain: dict[int, float]
    adj: dict[int, dict[int, float | None]]

    @classmethod
    def build(
        cls,
        gains: list[float],
        exclusive: Iterable[tuple[int, int]],
        interactions: Iterable[tuple[int, int, float]],
    ) -> InterferenceGraph:
        """Nodes 0..m-1; exclusive edges first, then the interactions, each in the order given."""
        nodes = list(range(len(gains)))
        adj: dict[int, dict[int, float | None]] = {n: {} for n in nodes}
        for i, j in exclusive:
            adj[i][j] = adj[j][i] = EXCLUSIVE
        for i, j, c in interactions:
            adj[i][j] = adj[j][i] = c
        return cls(nodes, dict(enumerate(gains)), adj)

    def __len__(self) -> int:
        return len(self.nodes)

    def number_of_edges(self) -> int:
        return sum(len(nbrs) for nbrs in self.adj.values()) // 2

    def has_edge_within(self, subset: set[int]) -> bool:
        """Some two nodes of ``subset`` interfere."""
        adj = self.adj
        return any(v in subset for u in subset for v in adj[u])

    def edges(self) -> Iterator[tuple[int, int, float | None]]:
        """Each edge once, (u, v, c) with u before v in node order (networkx's ``edges(data=True)`` order)."""
        seen: set[int] = set()
        adj = self.adj
        for u in self.nodes:
            for v, c in adj[u].items():
                if v not in seen:
                    yield u, v, c
            seen.add(u)

    def components(self) -> Iterator[set[int]]:
        """Connected components: breadth first from the first node not yet seen (``nx.connected_components``).

        Each is the set filled in visiting order, as networkx fills it: its iteration order is what a
        component subgraph's node order follows (``component``)."""
        seen: set[int] = set()
        adj = self.adj
        for source in self.nodes:
            if source in seen:
                continue
            found = {source}
            level = [source]
            while level:
                following = []
                for v in level:
                    for w in adj[v]:
                        if w not in found:
                            found.add(w)
                            following.append(w)
                level = following
            seen.update(found)
            yield found

    def component(self, comp: set[int], copy: bool = False) -> InterferenceGraph:
        """The subgraph of one connected component (closed under ``adj``), nodes and neighbours in the order
        of ``nx.Graph.subgraph(comp)``, or with ``copy`` of ``subgraph(comp).copy()``; the graph itself when
        the component is the whole graph (the engine took the graph, not a copy, then).

        networkx iterates a subgraph of fewer than half the nodes in the order of a set filled from ``comp``
        one node at a time, otherwise in the graph's node order; a copy re-adds every edge from each node in
        that order, so a node's earlier neighbours come first."""
        if len(comp) == len(self.nodes):
            return self
        shown: set[int] = set()
        if 2 * len(comp) < len(self.nodes):
            for n in comp:  # one at a time, not set(comp): a set copied whole can iterate in another order
                shown.add(n)
            order = list(shown)
        else:
            order = [n for n in self.nodes if n in comp]
        gain = {n: self.gain[n] for n in order}
        if not copy:
            return InterferenceGraph(order, gain, {n: self.adj[n] for n in order})
        adj: dict[int, dict[int, float | None]] = {n: {} for n in order}
        for u in order:
            for v, c in self.adj[u].items():
                adj[u][v] = adj[v][u] = c
        return InterferenceGraph(order, gain, adj)


def greedy_independent_set(graph: InterferenceGraph) -> set[int]:
    """Heaviest first, skipping neighbours of what was taken."""
    chosen: set[int] = set()
    blocked: set[int] = set()
    gain = graph.gain
    for node in sorted(graph.nodes, key=lambda n: (-gain[n], n)):
        if node not in blocked:
            chosen.add(node)
            blocked.update(graph.adj[node])
    return chosen


def _best_subset(graph: InterferenceGraph, independent: bool) -> set[int]:
    """The exact best nonempty subset of a small graph by enumeration: the heaviest independent set, or the best
    pairwise-model value Σ Δ_p − Σ c_pq (never two ends of an exclusive edge)."""
    nodes = list(graph.nodes)
    index = {n: k for k, n in enumerate(nodes)}
    m = len(nodes)
    subsets = ((np.arange(1, 1 << m)[:, None] >> np.arange(m)) & 1).astype(bool)  # every nonempty subset
    value = subsets.astype(float) @ np.array([graph.gain[n] for n in nodes], dtype=float)
    for u, v, c in graph.edges():
        both = subsets[:, index[u]] & subsets[:, index[v]]
        if independent or c is EXCLUSIVE:
            value[both] = -np.inf
        else:
            value[both] -= c
    best = subsets[int(np.argmax(value))]
    return {nodes[k] for k in np.flatnonzero(best)}


def max_weight_independent_set(graph: InterferenceGraph) -> set[int]:
    """Exact per connected component of at most EXACT_LIMIT nodes (enumeration up to ENUMERATE_LIMIT, CP-SAT
    above); greedy beyond."""
    chosen: set[int] = set()
    for comp in graph.components():
        sub = graph.component(comp)
        if len(comp) == 1:
            chosen |= set(comp)
        elif len(comp) <= ENUMERATE_LIMIT:
            chosen |= _best_subset(sub, independent=True)
        elif len(comp) <= EXACT_LIMIT:
            chosen |= _mwis_cpsat(sub)
        else:
            chosen |= greedy_independent_set(sub)
    return chosen


def _mwis_cpsat(graph: InterferenceGraph) -> set[int]:
    nodes = list(graph.nodes)
    factor = _scaled([graph.gain[n] for n in nodes])
    model = cp_model.CpModel()
    x = {n: model.new_bool_var(f"x{n}") for n in nodes}
    for u, v, _ in graph.edges():
        model.add(x[u] + x[v] <= 1)
    greedy = greedy_independent_set(graph)
    for n in nodes:
        model.add_hint(x[n], n in greedy)
    model.maximize(sum(round(graph.gain[n] * factor) * x[n] for n in nodes))
    solver = _solve(model)
    if solver is None:
        return greedy
    return {n for n in nodes if solver.boolean_value(x[n])}


def pairwise_model_value(graph: InterferenceGraph, subset: set[int]) -> float:
    """Predicted combined improvement Σ Δ_p − Σ c_pq over the subset."""
    gain = sum(graph.gain[n] for n in subset)
    adjacency = graph.adj
    for u in subset:  # each edge inside the subset once (u < v): the subset's degrees
        for v, c in adjacency[u].items():
            if v in subset and u < v:
                if c is EXCLUSIVE:
                    return float("-inf")
                gain -= c
    return gain


def _local_search(graph: InterferenceGraph) -> set[int]:
    """Best single, then flip single proposals while the pairwise model improves.

    Each node's marginal value Δ_n − Σ_{chosen q} c_nq is kept up to date along the flipped node's edges, so
    a flip costs its degree plus one argmax: linear per flip in a sparse graph (a dense c·chosen product
    per flip was O(n²)). An exclusive edge (same block) is a count of chosen exclusive neighbours.
    """
    nodes = list(graph.nodes)
    index = {n: k for k, n in enumerate(nodes)}
    gain = np.array([graph.gain[n] for n in nodes], dtype=float)
    adjacent: list[list[tuple[int, float]]] = [[] for _ in nodes]
    exclusive: list[list[int]] = [[] for _ in nodes]
    for u, v, c in graph.edges():
        a, b = index[u], index[v]
        if c is EXCLUSIVE:
            exclusive[a].append(b)
            exclusive[b].append(a)
        else:
            adjacent[a].append((b, c))
            adjacent[b].append((a, c))
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


def best_pairwise_combination(graph: InterferenceGraph) -> set[int]:
    """Maximize Σ Δ_p x_p − Σ c_pq x_p x_q over one component (a small pairwise selection).

    Products are linearized: y_pq ≥ x_p + x_q − 1 where c_pq > 0 (a penalty the
    solver wants to avoid), y_pq ≤ x_p, y_pq ≤ x_q where c_pq < 0 (a bonus).
    """
    nodes = list(graph.nodes)
    if len(nodes) == 1:
        return set(nodes)
    if len(nodes) <= ENUMERATE_LIMIT:
        return _best_subset(graph, independent=False)
    values = [graph.gain[n] for n in nodes]
    values += [c for _, _, c in graph.edges() if c is not EXCLUSIVE]
    factor = _scaled(values)
    model = cp_model.CpModel()
    x = {n: model.new_bool_var(f"x{n}") for n in nodes}
    terms = [round(graph.gain[n] * factor) * x[n] for n in nodes]
    for u, v, interaction in graph.edges():
        if interaction is EXCLUSIVE:
            model.add(x[u] + x[v] <= 1)
            continue
        c = round(interaction * factor)
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
