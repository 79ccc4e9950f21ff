"""sqlplan's neighbourhood generators for adaptive block selection (``Neighbourhoods.neighbourhoods``).

A block is a group of queries; its agent re-plans them and changes indexes on the tables they read. Ways to
re-form the groups (each block keeps its size; ``size`` of each block is its generator-picked *core*, the rest
of a block keeps its queries where there is room):

- ``partition``: keep the blocks.
- ``tables``: each core is a seed query (the costliest left, the rank shifted by ``attempt``) and the queries
  whose table sets overlap it most (Jaccard), so that the queries one index serves, and those it could slow
  down, are judged by one agent.
- ``cost``: the queries dealt by their *current* cost, snake order (the first partition deals them by their
  default cost): as queries get solved, the remaining heavy ones are spread so that no agent holds a block
  with nothing left to gain.
- ``random``: uniform cores (the control).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping, Sequence

NAMES = ("partition", "tables", "cost", "random")

Blocks = tuple[tuple[str, ...], ...]


def regroup_queries(blocks: Blocks, cores: Sequence[Sequence[str]]) -> Blocks:
    """Blocks of the same sizes, block b holding ``cores[b]`` (disjoint, each at most the block's size) and
    every other query in its old block where there is room, else in the first block with room."""
    sizes = [len(b) for b in blocks]
    taken = {q for core in cores for q in core}
    new = [list(core) for core in cores]
    spill: list[str] = []
    for b, old in enumerate(blocks):
        for q in old:
            if q in taken:
                continue
            (new[b] if len(new[b]) < sizes[b] else spill).append(q)
    for q in spill:
        b = next(i for i in range(len(new)) if len(new[i]) < sizes[i])
        new[b].append(q)
    return tuple(tuple(sorted(g)) for g in new)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / max(1, len(a | b))


def cores_by_tables(
    cost: Mapping[str, int], tables: Mapping[str, frozenset[str]], k: Sequence[int], attempt: int
) -> list[list[str]]:
    ranked = sorted(cost, key=lambda q: (-cost[q], q))
    shift = attempt % max(1, len(ranked))
    ranked = ranked[shift:] + ranked[:shift]
    left = set(cost)
    cores: list[list[str]] = []
    for want in k:
        seed = next((q for q in ranked if q in left), None)
        if seed is None or want == 0:
            cores.append([])
            continue
        near = sorted(left - {seed}, key=lambda q: (-_jaccard(tables[seed], tables[q]), -cost[q], q))
        core = [seed, *near[: want - 1]]
        left -= set(core)
        cores.append(core)
    return cores


def cores_by_cost(cost: Mapping[str, int], k: Sequence[int]) -> list[list[str]]:
    ranked = sorted(cost, key=lambda q: (-cost[q], q))
    n = len(k)
    cores: list[list[str]] = [[] for _ in range(n)]
    for i, q in enumerate(ranked):
        r, j = divmod(i, n)
        b = j if r % 2 == 0 else n - 1 - j
        if len(cores[b]) < k[b]:
            cores[b].append(q)
    return cores


def form_query_blocks(
    blocks: Blocks,
    cost: Mapping[str, int],
    tables: Mapping[str, frozenset[str]],
    name: str,
    size: float,
    attempt: int,
) -> Blocks | None:
    """New blocks by generator ``name`` from each query's current ``cost`` (in the task's query order) and the
    ``tables`` it reads; None when they stay as they are. Plain data in and out: the task applies them."""
    if name == "partition" or len(blocks) < 2:
        return None
    k = [max(1, min(len(b), round(size * len(b)))) for b in blocks]
    if name == "tables":
        cores = cores_by_tables(cost, tables, k, attempt)
    elif name == "cost":
        cores = cores_by_cost(cost, k)
    elif name == "random":
        rng = random.Random(attempt * 1_000_003 + zlib.crc32(name.encode()))
        pool = list(cost)
        rng.shuffle(pool)
        cores, at = [], 0
        for want in k:
            cores.append(pool[at : at + want])
            at += want
    else:
        raise ValueError(f"sqlplan has no neighbourhood generator '{name}' (it has {', '.join(NAMES)})")
    new = regroup_queries(blocks, cores)
    return None if new == tuple(tuple(sorted(b)) for b in blocks) else new
