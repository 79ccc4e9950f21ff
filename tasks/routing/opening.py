"""A team's opening: while most leases merge, every lease is the whole plan, searched briefly.

Early in a run the first plan has slack everywhere. An agent that holds a fifth of the plan exhausts it
within its budget: 2 to 16 agents on fifths were slower than one agent on the whole plan to every target
down to 7,300 (k = 300, random-32-32-10: 0.4-0.9x). Leasing every agent the whole plan, answered after
``OPENING_SECONDS`` so that answers stay fresh, made 4 and 8 agents 1.1-1.4x faster than one agent there.
Later the few improvements left are found by every agent that searches the whole plan, and whole-plan
leases gained 24-70 from 10 s to 20 s where fifths drawn where the plan has delay gained 129-160
(8 agents; docs/notes/2026-12-05-lease-sizes.md).

The phase shows in what merges: in the opening about half the leases merge, later one in twenty (at 16
agents, 9 in 10 leases then find nothing). ``Opening`` counts, over the last ``WINDOW`` leases, those whose
block merged an answer before it was leased again, and ends the opening for good when fewer than
``CLOSE_SHARE`` did. Its books live in the coordinator's process, as the task's other caches do: a replica
decides on its own, and the phase changes speed, never correctness.
"""

from __future__ import annotations

from collections import deque

WINDOW = 48
"""Leases whose outcome counts (1 to 2 s of the opening of a 16-agent team at k = 300)."""

CLOSE_SHARE = 0.2
"""The opening ends when fewer leases than this share of the window merged."""

WALK_SECONDS = 0.05
"""Search seconds of a team's lease when the plan walks with it (``level_merges``): the model of a team with
no protocol gained with every search merged after 0.05 s of steps; in the product (16 agents, 20 s, seeds
1-3) searches of 0.1 s ended 31-58 higher than those of 0.05 s, and higher than a team without level merges
(docs/notes/2026-12-07-the-head-walks.md)."""

OPENING_SECONDS = 0.1
"""Search seconds of an opening lease (the contract's ``search_seconds``): a whole-plan answer found in
0.5 s wrote about 100 robots, most of which collided with what merged meanwhile."""


class Opening:
    """Whether the next lease is an opening one (``open``), told of leases (``leased``) and merges
    (``merged``)."""

    def __init__(self, window: int = WINDOW, close_share: float = CLOSE_SHARE) -> None:
        self.close_share = close_share
        self._outcomes: deque[bool] = deque(maxlen=window)
        self._pending: dict[int, bool] = {}
        """Block -> whether an answer merged from its current lease."""
        self._open = True

    @property
    def open(self) -> bool:
        return self._open

    def leased(self, block: int) -> None:
        """``block`` is leased anew: its last lease's outcome is booked, and the opening may end."""
        last = self._pending.pop(block, None)
        if last is not None:
            self._outcomes.append(last)
        self._pending[block] = False
        full = len(self._outcomes) == self._outcomes.maxlen
        if self._open and full and sum(self._outcomes) < self.close_share * len(self._outcomes):
            self._open = False

    def merged(self, block: int) -> None:
        """An answer from ``block``'s current lease merged."""
        if block in self._pending:
            self._pending[block] = True
