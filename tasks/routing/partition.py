"""Splitting robots into blocks: round-robin, or spatial clusters of balanced size.

Spatial blocks put robots whose routes are close into one block, so fewer
conflicts cross block borders and more proposals merge without interfering.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def round_robin(n_robots: int, n_blocks: int) -> list[list[int]]:
    return [list(range(b, n_robots, n_blocks)) for b in range(n_blocks)]


def spatial(
    points: Sequence[tuple[float, float]], n_blocks: int, seed: int = 0, iters: int = 20
) -> list[list[int]]:
    """Balanced k-means on route midpoints: clusters of size ceil(n/k) or one less."""
    n = len(points)
    if n_blocks >= n:
        return [[i] for i in range(n)] + [[] for _ in range(n_blocks - n)]
    rng = random.Random(seed)
    centres = [points[i] for i in rng.sample(range(n), n_blocks)]
    cap = math.ceil(n / n_blocks)
    assign = [0] * n
    for _ in range(iters):
        pairs = sorted(
            ((points[i][0] - cx) ** 2 + (points[i][1] - cy) ** 2, i, b)
            for i in range(n)
            for b, (cx, cy) in enumerate(centres)
        )
        size = [0] * n_blocks
        done = [False] * n
        for _, i, b in pairs:
            if not done[i] and size[b] < cap:
                done[i] = True
                assign[i] = b
                size[b] += 1
        new = []
        for b in range(n_blocks):
            members = [points[i] for i in range(n) if assign[i] == b]
            if members:
                new.append(
                    (sum(p[0] for p in members) / len(members), sum(p[1] for p in members) / len(members))
                )
            else:
                new.append(centres[b])
        if new == centres:
            break
        centres = new
    groups = [[i for i in range(n) if assign[i] == b] for b in range(n_blocks)]
    for b in range(n_blocks):  # capacity-greedy can leave a block empty: lend it the nearest robot
        if not groups[b]:
            donor = max(range(n_blocks), key=lambda j: len(groups[j]))
            cx, cy = centres[b]
            i = min(groups[donor], key=lambda i: (points[i][0] - cx) ** 2 + (points[i][1] - cy) ** 2)
            groups[donor].remove(i)
            groups[b].append(i)
    return groups


def by_interaction(
    weights: dict[tuple[int, int], float], start: list[list[int]], passes: int = 6
) -> list[list[int]]:
    """Improve a balanced partition by swapping robot pairs across blocks to cut interaction weight.

    ``weights[i, j]`` (i < j) measures how much robots i and j get in each
    other's way; robots that interact should share a block, because a block's
    agent can re-plan its own robots jointly but must take other blocks' paths
    as given. Swaps keep block sizes, so the balance of ``start`` is kept.
    """
    block = {i: b for b, g in enumerate(start) for i in g}
    adj: dict[int, dict[int, float]] = {i: {} for i in block}
    for (i, j), w in weights.items():
        adj[i][j] = adj[i].get(j, 0.0) + w
        adj[j][i] = adj[j].get(i, 0.0) + w
    # pull[i][b]: weight between robot i and the robots of block b, kept up to date on every swap,
    # so a candidate swap costs O(1) and a pass O(weighted robots x robots).
    pull = {i: [0.0] * len(start) for i in block}
    for i, nbrs in adj.items():
        for j, w in nbrs.items():
            pull[i][block[j]] += w

    def move(i: int, src: int, dst: int) -> None:
        block[i] = dst
        for k, w in adj[i].items():
            pull[k][src] -= w
            pull[k][dst] += w

    robots = sorted(block)
    weighted = [i for i in robots if adj[i]]  # a swap of two robots without weights gains nothing
    for _ in range(passes):
        improved = False
        for i in weighted:
            for j in robots:
                bi, bj = block[i], block[j]
                if bi == bj:
                    continue
                pi, pj = pull[i], pull[j]
                gain = pi[bj] - pi[bi] + pj[bi] - pj[bj] - 2 * adj[i].get(j, 0.0)
                if gain > 1e-9:
                    move(i, bi, bj)
                    move(j, bj, bi)
                    improved = True
        if not improved:
            break
    return [[i for i in robots if block[i] == b] for b in range(len(start))]


def shaken(groups: list[list[int]], robots: list[int], swaps: int, seed: int) -> list[list[int]]:
    """``groups`` after ``swaps`` random swaps that each move one of ``robots`` to another block.

    Swap search stops in a local optimum; a shake lets the next search leave it.
    Sizes are kept.
    """
    rng = random.Random(seed)
    out = [list(g) for g in groups]
    where = {i: b for b, g in enumerate(out) for i in g}
    if len(out) < 2 or not robots:
        return out
    for _ in range(swaps):
        i = rng.choice(robots)
        bi = where[i]
        bj = rng.choice([b for b in range(len(out)) if b != bi and out[b]])
        j = rng.choice(out[bj])
        out[bi][out[bi].index(i)], out[bj][out[bj].index(j)] = j, i
        where[i], where[j] = bj, bi
    return out
