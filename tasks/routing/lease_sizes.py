"""How many robots the next overlapping lease holds: the size whose leases merged the most of late.

No one size serves a whole run (k = 300, random-32-32-10, virtual cores): while the first plan is far from
good, a lease of the whole plan lets each agent search where one agent alone would, and a team of 4 or 8
was 1.1-1.4x faster than one agent to 7,300 with it, against 0.4-0.9x with a fifth of the plan. Later the
few improvements left are found by every agent that searches the whole plan, only the first merges, and a
fifth drawn where the plan has delay spreads the team out: from 10 s to 20 s, 8 agents gained 47-70 with
whole-plan leases, 110-160 with fifths (docs/notes/2026-12-05-lease-sizes.md).

So each size is an arm, paid by what merges from its leases: a lease's gain is what its block's answers
merged before the block was leased again (nothing, when its agent found nothing or its answer was
refused). The arms are compared on the last ``WINDOW`` leases only, so the choice follows the run's phase:
the better arm is leased, the other one now and then (``EXPLORE``), and an arm with fewer than two leases
in the window is leased next, to see whether the phase changed. The books live in the coordinator's
process, as the task's other caches do: a replica learns on its own, and a size changes speed, never
correctness.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence

WINDOW = 48
"""Leases whose outcome counts: at 8 agents on k = 300, about the last two seconds."""

EXPLORE = 0.1
"""Share of leases given to a size other than the best one."""


class LeaseSizes:
    """Chooses a size for each lease (``choose``) and is told what each block's answer merged (``credit``)."""

    def __init__(self, sizes: Sequence[int], window: int = WINDOW, explore: float = EXPLORE) -> None:
        if not sizes:
            raise ValueError("LeaseSizes needs at least one size")
        self.sizes = tuple(dict.fromkeys(sizes))
        self.explore = explore
        self._outcomes: deque[tuple[int, float]] = deque(maxlen=window)
        """(size, gain merged) of the last leases whose blocks were leased again."""
        self._open: dict[int, list[float]] = {}
        """Block -> [size of its current lease, gain merged from it so far]."""

    def choose(self, block: int, rng: random.Random) -> int:
        """The size of ``block``'s next lease; its last lease's outcome goes into the books."""
        last = self._open.pop(block, None)
        if last is not None:
            self._outcomes.append((int(last[0]), last[1]))
        scores = self.scores()
        best = max(self.sizes, key=lambda s: scores[s])
        others = [s for s in self.sizes if s != best]
        size = rng.choice(others) if others and rng.random() < self.explore else best
        self._open[block] = [float(size), 0.0]
        return size

    def credit(self, block: int, gain: float) -> None:
        """``block``'s answer merged and lowered the objective by ``gain``."""
        lease = self._open.get(block)
        if lease is not None and gain > 0:
            lease[1] += gain

    def scores(self) -> dict[int, float]:
        """Size -> mean gain merged per lease in the window; infinite for a size leased less than twice
        there (it is tried next)."""
        out: dict[int, float] = {}
        for size in self.sizes:
            gains = [g for s, g in self._outcomes if s == size]
            out[size] = sum(gains) / len(gains) if len(gains) >= 2 else float("inf")
        return out
