"""Queries a screening database cannot see, and how they are measured instead.

A query's screened cost is priced in full-database units by the ratio of its two defaults. That fails
when a selective filter matches nothing on the small copy: q17 under a part-first plan costs 0 on SF 0.01
(no part is 'Brand#23' and 'MED BOX') and 1.34 M on SF 0.1, so every index for it looks worthless. Such a
query is measured on the full database, its probes capped so that a move that does not pay is cheap.
"""

from __future__ import annotations

BLIND_FACTOR = 10.0
"""blind: the exact cost is this many times the screen's priced prediction ..."""
BLIND_MIN_GAP = 10_000.0
"""... and this much more (progress callbacks), so that small queries never count."""
BLIND_PROBE_CAP = 20_000
"""a blind query's probe stops here: ~0.6 s of SQLite at ~36,000 callbacks/s (measured on SF 0.1)."""


def is_blind(exact: float, predicted: float) -> bool:
    """The screen's priced prediction misses the query's exact cost by far (only under-predictions: an
    over-predicted cost makes a proposer chase gains the exact check then refuses, it hides none)."""
    return exact - predicted > BLIND_MIN_GAP and exact > BLIND_FACTOR * max(1.0, predicted)


def probe_cap(exact: float) -> int:
    """Only moves that at least halve the query (or bring it under the cap) are measured to the end."""
    return max(1, int(min(exact / 2, BLIND_PROBE_CAP)))
