"""Which proposals may interfere: candidate pairs through an index, never by testing all pairs.

An inverted index maps each footprint item to the proposals whose footprint holds it; only proposals that
share an item (or a block) become a candidate pair. The cost is the number of (item, pair) incidences, so a
round where footprints are sparse costs about the proposals and their footprints, not their square.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence


def _pairs_within(groups: dict[Hashable, list[int]]) -> set[tuple[int, int]]:
    """Every (i, j), i < j, of indices listed together in one group (lists are in increasing order)."""
    found: set[tuple[int, int]] = set()
    for members in groups.values():
        if len(members) > 1:
            found.update(itertools.combinations(members, 2))
    return found


def candidate_pairs(
    blocks: Sequence[int], footprints: Sequence[frozenset[Hashable]]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(pairs proposing for the same block, pairs of other blocks whose footprints share an item).

    Both lists hold (i, j) with i < j in lexicographic order (the order of ``itertools.combinations``),
    so the interference graph, and every choice made on it, is the same as with the all-pairs loop.
    """
    by_block: dict[Hashable, list[int]] = defaultdict(list)
    by_item: dict[Hashable, list[int]] = defaultdict(list)
    for i, (block, footprint) in enumerate(zip(blocks, footprints, strict=True)):
        by_block[block].append(i)
        for item in footprint:
            by_item[item].append(i)
    same = _pairs_within(by_block)
    overlapping = _pairs_within(by_item) - same
    return sorted(same), sorted(overlapping)
