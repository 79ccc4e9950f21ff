"""Index rebuilds (``indexes.rebuilds``): whatever a table has, it ends with exactly the wanted indexes,
created in sorted order, and an index already in place in that order is never dropped (SQLite's tie-break
is creation order, so the order makes a plan a function of the index set; dropping less keeps evaluations
cheap)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tasks.sqlplan.indexes import IndexSpec, TableRebuild, rebuilds

POOL = [IndexSpec(t, (c,), ("BINARY",)) for t in ("orders", "lineitem") for c in ("a", "b", "c", "d")]
index_sets = st.frozensets(st.sampled_from(POOL))


def apply(have: dict[str, list[IndexSpec]], steps: list[TableRebuild]) -> dict[str, list[IndexSpec]]:
    out = {t: list(v) for t, v in have.items()}
    for step in steps:
        assert out.get(step.table, []) == step.keep + step.drop  # a step starts from what the table has
        out[step.table] = step.keep + step.create
    return {t: v for t, v in out.items() if v}


def sorted_by_table(indexes: frozenset[IndexSpec]) -> dict[str, list[IndexSpec]]:
    out: dict[str, list[IndexSpec]] = {}
    for i in sorted(indexes):
        out.setdefault(i.table, []).append(i)
    return out


@given(index_sets, index_sets)
def test_a_rebuild_ends_with_the_wanted_indexes_in_sorted_order(
    before: frozenset[IndexSpec], want: frozenset[IndexSpec]
) -> None:
    have = sorted_by_table(before)
    steps = list(rebuilds(have, want, frozenset(have)))
    assert apply(have, steps) == sorted_by_table(want)
    for step in steps:  # nothing in place is dropped: the kept prefix is the longest that matches
        assert not (step.drop and step.create and step.drop[0] == step.create[0])


def test_an_index_created_out_of_order_is_rebuilt() -> None:
    """The case the sorted order exists for: the same set, created in another order, is not the same plan."""
    a, b = POOL[0], POOL[1]
    (step,) = rebuilds({"orders": [b, a]}, frozenset({a, b}), frozenset({"orders"}))
    assert (step.keep, step.drop, step.create) == ([], [b, a], [a, b])
    (same,) = rebuilds({"orders": [a, b]}, frozenset({a, b}), frozenset({"orders"}))
    assert (same.keep, same.drop, same.create) == ([a, b], [], [])
