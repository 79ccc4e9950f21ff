"""Candidate pairs through the footprint index, and the sparse selection helpers, against their definitions."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.engine.interference import candidate_pairs
from coordinator.engine.selection import _local_search, pairwise_model_value
from tasks.quadratic import QuadraticParams, QuadraticTask, coupling_graph

footprints = st.lists(
    st.tuples(st.integers(0, 6), st.frozensets(st.integers(0, 12), max_size=4)), max_size=25
)


def all_pairs(
    blocks: list[int], fps: list[frozenset[int]]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The definition: every pair tested (what the engine did before the index)."""
    same, overlap = [], []
    for i, j in itertools.combinations(range(len(blocks)), 2):
        if blocks[i] == blocks[j]:
            same.append((i, j))
        elif fps[i] & fps[j]:
            overlap.append((i, j))
    return same, overlap


@settings(deadline=None)
@given(footprints)
def test_index_finds_exactly_the_overlapping_pairs_in_order(items: list[tuple[int, frozenset[int]]]) -> None:
    blocks = [b for b, _ in items]
    fps = [f for _, f in items]
    assert candidate_pairs(blocks, fps) == all_pairs(blocks, fps)
    assert candidate_pairs(blocks, fps, dense=True) == all_pairs(blocks, fps)
    assert candidate_pairs(blocks, fps, dense=False) == all_pairs(blocks, fps)


def test_dense_footprints_take_the_matrix_path_with_the_same_pairs() -> None:
    """Every block coupled to every other (quadratic-64 at coupling 0.3): the index would list 129,024
    incidences for 2,016 pairs; the matrix path gives the same pairs, two proposals per block included."""
    everything = frozenset(range(64))
    blocks = list(range(64)) + [5, 9]
    fps = [everything] * len(blocks)
    assert candidate_pairs(blocks, fps) == all_pairs(blocks, fps)
    assert candidate_pairs(blocks, fps, dense=True) == candidate_pairs(blocks, fps, dense=False)


def test_disjoint_footprints_give_no_candidates() -> None:
    same, overlap = candidate_pairs([0, 1, 2], [frozenset({"a"}), frozenset({"b"}), frozenset({"c"})])
    assert (same, overlap) == ([], [])
    same, overlap = candidate_pairs([0, 0, 2], [frozenset({"a"}), frozenset({"b"}), frozenset({"b"})])
    assert same == [(0, 1)] and overlap == [(1, 2)]


@st.composite
def weighted_graphs(draw: st.DrawFn, max_nodes: int = 12) -> nx.Graph:
    n = draw(st.integers(1, max_nodes))
    graph = nx.Graph()
    for k in range(n):
        graph.add_node(k, gain=draw(st.floats(0.01, 10.0)))
    for u, v in itertools.combinations(range(n), 2):
        kind = draw(st.sampled_from(["none", "none", "c", "exclusive"]))
        if kind == "c":
            graph.add_edge(u, v, c=draw(st.floats(-5.0, 5.0)))
        elif kind == "exclusive":
            graph.add_edge(u, v, exclusive=True, c=float("inf"))
    return graph


def view_model_value(graph: nx.Graph, subset: set[int]) -> float:
    gain = sum(graph.nodes[n]["gain"] for n in subset)
    for _, _, data in graph.subgraph(subset).edges(data=True):
        if data.get("exclusive"):
            return float("-inf")
        gain -= data["c"]
    return gain


@settings(max_examples=100, deadline=None)
@given(weighted_graphs(), st.data())
def test_model_value_matches_its_definition(graph: nx.Graph, data: st.DataObject) -> None:
    subset = data.draw(st.sets(st.sampled_from(list(graph.nodes)), min_size=1))
    assert np.isclose(
        pairwise_model_value(graph, subset), view_model_value(graph, subset)
    ) or pairwise_model_value(graph, subset) == view_model_value(graph, subset) == float("-inf")


@settings(max_examples=100, deadline=None)
@given(weighted_graphs())
def test_local_search_ends_at_a_feasible_local_optimum_no_worse_than_the_best_single(graph: nx.Graph) -> None:
    chosen = _local_search(graph)
    value = pairwise_model_value(graph, chosen)
    assert chosen and value > float("-inf")  # never two proposals of one block
    assert value >= max(graph.nodes[n]["gain"] for n in graph.nodes) - 1e-9
    tol = 1e-9 * max(1.0, value)
    for n in graph.nodes:  # no single flip improves the model (what "local optimum" means here)
        flipped = chosen ^ {n}
        if flipped:
            assert pairwise_model_value(graph, flipped) <= value + tol


def test_sparse_quadratic_couples_each_block_to_a_few_others_and_is_positive_definite() -> None:
    params = QuadraticParams(blocks=64, dim=3, neighbours=4, seed=2)
    task = QuadraticTask(params)
    degrees = [len(c) - 1 for c in task._coupled]  # minus the block itself
    assert 2 <= min(degrees) and max(degrees) <= 12 and 3 <= sum(degrees) / len(degrees) <= 5
    assert len(coupling_graph(params)) * 2 == sum(degrees)
    assert np.linalg.eigvalsh(task.a).min() > 0


def test_sparse_quadratic_matches_its_dense_matrix() -> None:
    """Stored as coupled blocks only, the instance must score exactly as its dense matrix says."""
    task = QuadraticTask(QuadraticParams(blocks=40, dim=3, neighbours=4, seed=5))
    a, b = task.a, task.b
    assert task.reference().value == np.float64(-0.5 * b @ np.linalg.solve(a, b)).item() or abs(
        task.reference().value - float(-0.5 * b @ np.linalg.solve(a, b))
    ) <= 1e-12 * abs(task.reference().value)
    rng = np.random.default_rng(0)
    state = task.initial_state()
    for _ in range(5):
        moves = {int(i): rng.standard_normal(3) for i in rng.choice(40, size=12, replace=False)}
        predicted = task.evaluate_change(state, moves)
        state = task.apply(state, moves)
        full = float(0.5 * state.x @ a @ state.x - b @ state.x)
        assert abs(predicted - full) <= 1e-9 * max(1.0, abs(full))
        assert abs(task.objective(state) - full) <= 1e-9 * max(1.0, abs(full))
    items = [(int(i), rng.standard_normal(3)) for i in range(40)]
    pairs = [(p, q) for p in range(40) for q in range(p + 1, 40) if items[q][0] in task._coupled[items[p][0]]]
    closed = task.interactions(state, items, pairs)
    for (p, q), c in zip(pairs, closed, strict=True):  # c_ij = Δx_iᵀ A_ij Δx_j from the dense matrix
        (i, vi), (j, vj) = items[p], items[q]
        di, dj = vi - state.x[3 * i : 3 * i + 3], vj - state.x[3 * j : 3 * j + 3]
        assert abs(c - float(di @ a[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] @ dj)) <= 1e-12 * max(1.0, abs(c))


@settings(max_examples=40, deadline=None)
@given(weighted_graphs(max_nodes=9))
def test_enumeration_finds_the_best_pairwise_combination(graph: nx.Graph) -> None:
    from coordinator.engine.selection import best_pairwise_combination, max_weight_independent_set

    nodes = list(graph.nodes)
    subsets = [set(c) for r in range(1, len(nodes) + 1) for c in itertools.combinations(nodes, r)]
    best = max(view_model_value(graph, s) for s in subsets)
    assert np.isclose(pairwise_model_value(graph, best_pairwise_combination(graph)), best)
    chosen = max_weight_independent_set(graph)
    assert not any(graph.has_edge(u, v) for u, v in itertools.combinations(chosen, 2))
    independent = [
        s for s in subsets if not any(graph.has_edge(u, v) for u, v in itertools.combinations(s, 2))
    ]
    assert np.isclose(
        sum(graph.nodes[n]["gain"] for n in chosen),
        max(sum(graph.nodes[n]["gain"] for n in s) for s in independent),
    )
