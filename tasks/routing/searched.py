"""The team's tabu list: a lease that found nothing sets its seeds aside, so later leases start elsewhere.

A share lease is grown from seeds, delayed robots drawn by their delay (``lease.lease_members``). Late in a
run most leases find nothing (at 16 agents on k = 300, 92-99 % of them from 12 s on), and the draw keeps
returning to the same few robots with the largest delays, whose neighbourhoods were just searched in vain.
One agent's LNS does not: MAPF-LNS's walk starts from the most-delayed robot *not in its tabu list*, and
clears the list once every delayed robot is in it. ``SearchedSeeds`` is that list for a team: the seeds of a
lease whose answer did not merge before its block was leased again are set aside, and the next leases draw
their seeds among the other delayed robots until none is left; then the list starts over.

Its books live in the coordinator's process, as the opening's do (``opening.py``): a replica keeps its own,
and the list changes where a search starts, never what merges.
"""

from __future__ import annotations


class SearchedSeeds:
    """The seeds set aside (``avoid``); told of leases (``leased``, ``seeded``) and merges (``merged``)."""

    def __init__(self) -> None:
        self.avoid: set[int] = set()
        """Robots not to start a lease from; ``lease.lease_members`` empties it when no delayed robot is left
        outside it."""
        self._seeds: dict[int, list[int]] = {}
        """Block -> the seeds of its current lease."""
        self._merged: set[int] = set()
        """Blocks whose current lease merged an answer."""

    def leased(self, block: int) -> None:
        """``block`` is about to be leased anew: its last lease's seeds are set aside if it merged nothing."""
        last = self._seeds.pop(block, None)
        if last is not None and block not in self._merged:
            self.avoid.update(last)
        self._merged.discard(block)

    def seeded(self, block: int, seeds: list[int]) -> None:
        """``block``'s new lease grew from ``seeds``."""
        self._seeds[block] = seeds

    def merged(self, block: int) -> None:
        """An answer from ``block``'s current lease merged."""
        self._merged.add(block)
