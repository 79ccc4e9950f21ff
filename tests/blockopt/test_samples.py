"""A speed-up read from samples of runs: exact rank-sum p-values, runs that stopped short, bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from blockopt.samples import TimedRun, pairings, stratified

ONE = [TimedRun(100.0, 120.0), TimedRun(110.0, 120.0), TimedRun(115.0, 120.0)]
TEAM = [TimedRun(10.0, 30.0), TimedRun(12.0, 30.0), TimedRun(13.0, 30.0)]


def test_three_runs_a_side_that_never_overlap_decide_at_one_in_twenty() -> None:
    above = pairings(ONE, TEAM, 7.0)  # 7 x 13 = 91 < 100: every one-agent run took longer
    assert (above.low, above.high, above.pairs) == (1.0, 1.0, 9)
    assert above.p_above == pytest.approx(1 / math.comb(6, 3)) and above.verdict == "above"
    below = pairings(ONE, TEAM, 12.0)  # 12 x 10 = 120 > 115: none did
    assert below.low == 0.0 and below.p_below == pytest.approx(1 / 20) and below.verdict == "below"


def test_samples_that_overlap_are_undecided() -> None:
    read = pairings(ONE, TEAM, 8.0)  # 8 x (10, 12, 13) = 80, 96, 104 against 100, 110, 115: 8 of 9
    assert read.low == pytest.approx(8 / 9) and read.p_above == pytest.approx(2 / 20)
    assert read.verdict == "undecided" and "89% of 9 pairings: undecided" in str(read)


def test_one_run_a_seed_on_three_seeds_can_never_say_above() -> None:
    """The issue's medians of 3 seeds, one run each: even a team faster on every seed has p = 1/8."""
    read = stratified([([TimedRun(100.0, 120.0)], [TimedRun(1.0, 30.0)])] * 3, 8.0)
    assert read.low == 1.0 and read.p_above == pytest.approx(1 / 8) and read.verdict == "undecided"


def test_seeds_add_up_to_a_verdict_no_seed_gives_alone() -> None:
    one_seed = pairings(ONE, TEAM, 8.0)
    two_seeds = stratified([(ONE, TEAM), (ONE, TEAM)], 8.0)
    assert one_seed.verdict == "undecided" and two_seeds.verdict == "above"
    assert two_seeds.p_above == pytest.approx(8 / 400)  # P(U1 + U2 >= 16), U of 3 x 3 each


def test_a_run_that_stopped_short_leaves_only_what_its_length_cannot_settle_open() -> None:
    never = TimedRun(None, 120.0)  # one agent that did not reach Q in 120 s took longer than 120 s
    assert pairings([never], [TimedRun(10.0, 30.0)], 8.0).low == 1.0  # 80 < 120: surely slower
    unsure = pairings([never], [TimedRun(16.0, 30.0)], 8.0)  # 128: is the run that stopped at 120 s above it?
    assert (unsure.low, unsure.high) == (0.0, 1.0) and unsure.verdict == "undecided"
    short = pairings(
        [TimedRun(100.0, 120.0)], [TimedRun(None, 20.0)], 8.0
    )  # the team took over 160 s, scaled
    assert (short.low, short.high) == (0.0, 0.0)
    stopped = pairings(ONE, [*TEAM[:2], TimedRun(None, 10.0)], 8.0)  # over 80 s, scaled: open against 100-115
    assert "S >= 8 in 67%-100% of 9 pairings: undecided" in str(stopped)


@pytest.mark.parametrize(
    ("reference", "others", "goal", "reason"),
    [([], TEAM, 8.0, "at least one run"), (ONE, [], 8.0, "at least one run"), (ONE, TEAM, 0.0, "positive")],
)
def test_bad_samples_say_why(
    reference: list[TimedRun], others: list[TimedRun], goal: float, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        pairings(reference, others, goal)


times = st.lists(st.one_of(st.none(), st.floats(0.1, 200.0)), min_size=1, max_size=5)


@given(times, times, st.floats(0.5, 20.0))
def test_the_shares_and_chances_are_consistent(
    one: list[float | None], team: list[float | None], goal: float
) -> None:
    read = pairings([TimedRun(t, 120.0) for t in one], [TimedRun(t, 30.0) for t in team], goal)
    assert 0.0 <= read.low <= read.high <= 1.0
    assert 0.0 <= read.p_above <= 1.0 and 0.0 <= read.p_below <= 1.0
    assert read.p_above + read.p_below >= 1.0 - 1e-9  # the two tails cover every statistic between
    assert not (read.verdict == "above" and read.low < 0.5)
