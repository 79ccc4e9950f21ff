"""Which proposals may interfere: candidate pairs through an index, never by testing all pairs one by one.

An inverted index maps each footprint item to the proposals whose footprint holds it; only proposals that
share an item (or a block) become a candidate pair. The cost is the number of (item, pair) incidences, so a
round where footprints are sparse costs about the proposals and their footprints, not their square. When the
footprints overlap so much that those incidences outnumber the pairs themselves (every block coupled to every
other: 64 proposals sharing 64 items are 129,024 incidences for 2,016 pairs), one boolean matrix product over
the (proposal × item) incidence matrix finds the same pairs in numpy instead.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence

import numpy as np

DENSE_CELLS = 4_000_000
"""Largest (proposals × items) incidence matrix the dense path builds."""


def _pairs_within(groups: dict[Hashable, list[int]]) -> set[tuple[int, int]]:
    """Every (i, j), i < j, of indices listed together in one group (lists are in increasing order)."""
    found: set[tuple[int, int]] = set()
    for members in groups.values():
        if len(members) > 1:
            found.update(itertools.combinations(members, 2))
    return found


def _dense_pairs(
    blocks: Sequence[int], by_item: dict[Hashable, list[int]]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """``candidate_pairs`` by one product of the incidence matrix with itself (pairs in row-major order,
    i.e. lexicographic, as ``sorted`` gives them)."""
    m = len(blocks)
    incidence = np.zeros((m, max(1, len(by_item))), dtype=np.float32)  # counts < 2^24: exact in float32
    for column, members in enumerate(by_item.values()):
        incidence[members, column] = 1.0
    shared = (incidence @ incidence.T) > 0.5
    block = np.asarray(blocks)
    left, right = np.triu_indices(m, 1)
    same = block[left] == block[right]
    overlapping = shared[left, right] & ~same
    return (
        list(zip(left[same].tolist(), right[same].tolist(), strict=True)),
        list(zip(left[overlapping].tolist(), right[overlapping].tolist(), strict=True)),
    )


def candidate_pairs(
    blocks: Sequence[int], footprints: Sequence[frozenset[Hashable]], dense: bool | None = None
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(pairs proposing for the same block, pairs of other blocks whose footprints share an item).

    Both lists hold (i, j) with i < j in lexicographic order (the order of ``itertools.combinations``),
    so the interference graph, and every choice made on it, is the same as with the all-pairs loop.
    ``dense``: force the matrix path (True) or the index (False); by default the cheaper one is taken.
    """
    if len(blocks) < 2:  # an async arrival scores alone: indexing its footprint would find nothing
        return [], []
    by_block: dict[Hashable, list[int]] = defaultdict(list)
    by_item: dict[Hashable, list[int]] = defaultdict(list)
    for i, (block, footprint) in enumerate(zip(blocks, footprints, strict=True)):
        by_block[block].append(i)
        for item in footprint:
            by_item[item].append(i)
    m = len(blocks)
    if dense is None:
        incidences = sum(len(v) * (len(v) - 1) // 2 for v in by_item.values())
        dense = incidences * 4 >= m * m and m * len(by_item) <= DENSE_CELLS
    if dense and m > 1:
        return _dense_pairs(blocks, by_item)
    same = _pairs_within(by_block)
    overlapping = _pairs_within(by_item) - same
    return sorted(same), sorted(overlapping)
