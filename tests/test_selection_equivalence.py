"""The plain-dict interference graph against the networkx one it replaced: same components, same subgraph
orders, same selections, and the same rounds (tests/selection_nx_reference.py is the networkx code).

Equality is exact, iteration order included: the engine turns chosen sets into group lists and breaks ties
by that order, and sums interactions in edge order, so "the same set" is not enough.
"""

from __future__ import annotations

import math
from typing import Any

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.engine import selection
from coordinator.engine.contract import contract_envelope
from coordinator.engine.interference import candidate_pairs
from coordinator.engine.records import Proposal
from coordinator.engine.rounds import EngineSettings, RoundEngine, _Meter, _Scored
from coordinator.engine.selection import InterferenceGraph
from tasks.quadratic import QuadraticParams, QuadraticProposer, QuadraticTask
from tests import selection_nx_reference as ref

TOLERANCE = 1e-12


class NxGraph(nx.Graph):  # type: ignore[misc]
    """The reference graph, with the one query the engine now asks of its graph."""

    def has_edge_within(self, subset: set[int]) -> bool:
        return bool(self.subgraph(subset).number_of_edges() > 0)


def nx_graph(
    gains: list[float], same: list[tuple[int, int]], overlap: list[tuple[int, int]], cs: Any
) -> NxGraph:
    """As ``RoundEngine._interference_graph`` built it before (9c0358e)."""
    graph = NxGraph()
    for i, g in enumerate(gains):
        graph.add_node(i, gain=g)
    graph.add_edges_from((i, j, {"exclusive": True, "c": float("inf")}) for i, j in same)
    graph.add_edges_from(
        (i, j, {"c": c}) for (i, j), c in zip(overlap, cs, strict=True) if abs(c) > TOLERANCE
    )
    return graph


def dict_graph(
    gains: list[float], same: list[tuple[int, int]], overlap: list[tuple[int, int]], cs: Any
) -> InterferenceGraph:
    return InterferenceGraph.build(
        gains, same, ((i, j, c) for (i, j), c in zip(overlap, cs, strict=True) if abs(c) > TOLERANCE)
    )


def nx_edges(graph: nx.Graph) -> list[tuple[int, int, float | None]]:
    return [(u, v, None if d.get("exclusive") else d["c"]) for u, v, d in graph.edges(data=True)]


def same_value(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


# gains and interactions from small pools as well as anywhere: ties are where an order shows
gains_st = st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.25]) | st.floats(0.01, 10.0)
interaction_st = st.sampled_from([0.0, 1e-15, 0.5, -0.5, 1.0, 2.0]) | st.floats(-5.0, 5.0)


@st.composite
def rounds(
    draw: st.DrawFn, max_nodes: int = 18
) -> tuple[list[float], list[tuple[int, int]], list[tuple[int, int]], list[float]]:
    """A round's improving proposals as the engine sees them: gains, and the pairs ``candidate_pairs`` finds
    from random blocks and footprints, with an interaction per overlapping pair."""
    n = draw(st.integers(1, max_nodes))
    blocks = draw(st.lists(st.integers(0, n + 2), min_size=n, max_size=n))
    fps = draw(st.lists(st.frozensets(st.integers(0, 2 * n), max_size=2), min_size=n, max_size=n))
    gains = draw(st.lists(gains_st, min_size=n, max_size=n))
    same, overlap = candidate_pairs(blocks, fps)
    cs = draw(st.lists(interaction_st, min_size=len(overlap), max_size=len(overlap)))
    return gains, same, overlap, cs


@settings(max_examples=300, deadline=None)
@given(rounds(max_nodes=70))  # past 32 nodes, small components' sets iterate out of numeric order
def test_graph_components_and_subgraphs_iterate_as_networkx(case: Any) -> None:
    old, new = nx_graph(*case), dict_graph(*case)
    assert list(old.nodes) == new.nodes and len(old) == len(new)
    assert nx_edges(old) == list(new.edges())
    assert old.number_of_edges() == new.number_of_edges()
    old_comps, new_comps = list(nx.connected_components(old)), list(new.components())
    assert [list(c) for c in old_comps] == [list(c) for c in new_comps]
    for comp in old_comps:
        view = old.subgraph(comp)
        copied = old if len(comp) == len(old) else view.copy()  # as the engine took it
        new_view, new_copy = new.component(comp), new.component(comp, copy=True)
        assert list(view.nodes) == new_view.nodes and nx_edges(view) == list(new_view.edges())
        assert list(copied.nodes) == new_copy.nodes and nx_edges(copied) == list(new_copy.edges())
        assert {u: list(copied.adj[u]) for u in copied} == {u: list(new_copy.adj[u]) for u in new_copy.nodes}
        assert {n: copied.nodes[n]["gain"] for n in copied} == new_copy.gain
        assert old.has_edge_within(set(comp)) == new.has_edge_within(set(comp))


@settings(max_examples=200, deadline=None)
@given(rounds(max_nodes=40))
def test_selections_are_the_networkx_ones_in_the_same_order(case: Any) -> None:
    old, new = nx_graph(*case), dict_graph(*case)
    assert list(ref.max_weight_independent_set(old)) == list(selection.max_weight_independent_set(new))
    assert list(ref.greedy_independent_set(old)) == list(selection.greedy_independent_set(new))
    for comp in nx.connected_components(old):
        sub = old if len(comp) == len(old) else old.subgraph(comp).copy()
        new_sub = new.component(comp, copy=True)
        found = ref.best_pairwise_combination(sub)
        assert list(found) == list(selection.best_pairwise_combination(new_sub))
        assert same_value(
            ref.pairwise_model_value(sub, found), selection.pairwise_model_value(new_sub, found)
        )
        assert list(ref._local_search(sub)) == list(selection._local_search(new_sub))
        assert old.has_edge_within(found) == new.has_edge_within(found)


class NetworkxEngine(RoundEngine):
    """The round engine with its interference graph and selection as they were (networkx, 9c0358e)."""

    def _interference_graph(self, state: Any, f0: float, scored: list[_Scored], meter: _Meter) -> Any:
        same, overlap = candidate_pairs([s.proposal.block for s in scored], [s.footprint for s in scored])
        values: Any = ()
        if overlap:
            items = [(s.proposal.block, s.value) for s in scored]
            values = meter(self.task.interactions, state, items, overlap, f0)
        graph = NxGraph()
        for i, s in enumerate(scored):
            graph.add_node(i, gain=s.gain)
        graph.add_edges_from((i, j, {"exclusive": True, "c": float("inf")}) for i, j in same)
        graph.add_edges_from(
            (i, j, {"c": c}) for (i, j), c in zip(overlap, values, strict=True) if abs(c) > self.tolerance
        )
        return graph

    def _select(self, state: Any, f0: float, scored: list[_Scored], graph: Any, meter: _Meter) -> Any:
        if not scored:
            return set(), 0
        checks = 0
        if self.settings.merge_policy == "independent":
            chosen = ref.max_weight_independent_set(graph)
            groups = [{i} for i in chosen]
            gains = [scored[i].gain for i in chosen]
        else:
            groups, gains = [], []
            for comp in nx.connected_components(graph):
                sub = graph if len(comp) == len(graph) else graph.subgraph(comp).copy()
                group, gain, used = self._checked_component(state, f0, scored, sub, meter)
                groups.append(group)
                gains.append(gain)
                checks += used
        union = set().union(*groups)
        if len(groups) == 1:
            return union, checks
        exact = self._exact_gain(state, f0, scored, union, meter)
        checks += 1
        if self._agrees(sum(gains), exact) and exact > 0:
            return union, checks
        chosen, _, used = self._greedy_checked(state, f0, scored, groups, gains, meter)
        return chosen, checks + used

    def _checked_component(
        self, state: Any, f0: float, scored: list[_Scored], sub: Any, meter: _Meter
    ) -> Any:
        nodes = list(sub.nodes)
        best_single = max(nodes, key=lambda n: scored[n].gain)
        if len(nodes) == 1:
            return {best_single}, scored[best_single].gain, 0
        subset = ref.best_pairwise_combination(sub)
        predicted = ref.pairwise_model_value(sub, subset)
        exact = (
            self._exact_gain(state, f0, scored, subset, meter)
            if len(subset) > 1
            else scored[best_single].gain
        )
        checks = 1 if len(subset) > 1 else 0
        if not self._agrees(predicted, exact):
            greedy, greedy_gain, used = self._greedy_checked(
                state, f0, scored, [{n} for n in nodes], [scored[n].gain for n in nodes], meter
            )
            checks += used
            if greedy_gain > exact:
                subset, exact = greedy, greedy_gain
        if exact < scored[best_single].gain:
            return {best_single}, scored[best_single].gain, checks
        return subset, exact, checks


TIMING = {"engine_seconds", "eval_seconds"}


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["checked", "independent"]),
    st.integers(0, 2**16),
    st.integers(2, 24),
    st.sampled_from([None, 1, 2, 4]),
    st.sampled_from([0.0, 0.3, 1.0]),
)
def test_rounds_are_the_networkx_engine_rounds(
    policy: str, seed: int, n_blocks: int, neighbours: int | None, noise: float
) -> None:
    """Whole rounds on quadratic instances, sparse and dense, several proposals per block and noisy ones
    among them: every verdict, the record (timings aside) and the snapshot are the networkx engine's."""
    task = QuadraticTask(
        QuadraticParams(blocks=n_blocks, dim=2, coupling=0.5, neighbours=neighbours, seed=seed % 7)
    )
    settings_ = EngineSettings(merge_policy=policy)  # type: ignore[arg-type]
    old, new = NetworkxEngine(task, settings_), RoundEngine(task, settings_)
    snap = new.initial_snapshot()
    rng = np.random.default_rng(seed)
    proposer = QuadraticProposer(noise=noise, seed=seed)
    for index in range(3):
        props = []
        for k, block in enumerate(rng.integers(0, n_blocks, size=int(rng.integers(1, 2 * n_blocks + 1)))):
            draft = proposer.propose(contract_envelope(task, snap, int(block)))
            if draft is None:
                continue
            props.append(
                Proposal(
                    id=f"p{index}-{k}",
                    agent="a",
                    block=int(block),
                    value=draft.value,
                    base_version=snap.version,
                    predicted_improvement=draft.predicted_improvement,
                )
            )
        a = old.run_round(snap, props, index)
        b = new.run_round(snap, props, index)
        assert a.verdicts == b.verdicts
        assert a.record.model_dump(exclude=TIMING) == b.record.model_dump(exclude=TIMING)
        assert a.committed == b.committed and a.snapshot.objective == b.snapshot.objective
        assert a.snapshot.block_versions == b.snapshot.block_versions
        snap = b.snapshot
