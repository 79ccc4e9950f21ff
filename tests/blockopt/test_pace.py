"""The pace reading: where along a run a team gains its speed-up (``blockopt/pace.py``)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from blockopt.pace import PacedRun, TeamPace, Trace, between, pace, reading

ONE = Trace([(0.0, 100.0), (10.0, 90.0), (30.0, 80.0), (60.0, 70.0)], 120.0)
TEAM = [(0.0, 100.0), (2.0, 90.0), (5.0, 80.0), (10.0, 70.0)]


def paced(team_ended: float, *reference: Trace) -> list[PacedRun]:
    return [PacedRun(Trace(TEAM, team_ended), reference)]


def test_the_pace_is_the_reference_time_to_the_teams_objective_mark_by_mark() -> None:
    """At 2 / 5 / 10 s the team holds what one agent held at 10 / 30 / 60 s; between the marks it covered
    20 s of one agent's in 3 s and 30 in 5."""
    paces = [pace(paced(30.0, ONE), t) for t in (2.0, 5.0, 10.0)]
    assert reading(paces) == (
        "at 2 / 5 / 10 s: 10.0 / 30.0 / 60.0 s (x5.0 / x6.0 / x6.0); between marks x6.7 / x6.0"
    )


def test_a_team_run_that_stopped_leaves_a_lower_bound_after_its_stop() -> None:
    """Stopped at 5 s (at a target): at 10 s it was at least where it stopped, x3.0 or more; no step there."""
    paces = [pace(paced(5.0, ONE), t) for t in (5.0, 10.0)]
    assert reading(paces) == "at 5 / 10 s: 30.0 / >=30.0 s (x6.0 / >=x3.0); between marks -"


def test_a_reference_run_that_never_got_there_took_longer_than_it_ran() -> None:
    """Against two runs that got to 70 at 60 s and one that ran 50 s without, the median is 60 s; against
    two that never did it is more than their length (a bound), not "never"."""
    slow = Trace([(0.0, 100.0), (20.0, 90.0), (40.0, 80.0)], 50.0)
    assert pace(paced(30.0, ONE, ONE, slow), 10.0) == TeamPace(10.0, 60.0, 60.0)
    bound = pace(paced(30.0, ONE, slow, slow), 10.0)
    assert bound == TeamPace(10.0, 50.0, math.inf)
    assert (bound.seconds(), bound.ratio()) == (">=50.0", ">=x5.0")
    endless = TeamPace(10.0, math.inf, math.inf)
    assert (endless.seconds(), endless.ratio()) == ("never", "-")
    assert between([TeamPace(1.0, 5.0, 5.0), TeamPace(2.0, 7.0, 7.0), TeamPace(3.0, 9.0, math.inf)]) == [
        2.0,
        None,
    ]


@given(
    steps=st.lists(st.floats(0.1, 100.0), min_size=1, max_size=8),
    k=st.floats(1.0, 16.0),
    mark=st.floats(0.01, 200.0),
)
def test_a_team_k_times_faster_paces_at_most_k_and_exactly_k_at_its_steps(
    steps: list[float], k: float, mark: float
) -> None:
    """The reference's curve run k times faster: at any mark its pace is at most xk, and at a step xk."""
    times = sorted(set(steps))
    one = [(0.0, 100.0), *((t, 90.0 - i) for i, t in enumerate(times))]
    team = Trace([(t / k, f) for t, f in one], math.inf)
    got = pace([PacedRun(team, [Trace(one, 200.0)])], mark)
    assert got.known and got.low <= k * mark * (1 + 1e-9)
    at_step = pace([PacedRun(team, [Trace(one, 200.0)])], team.curve[-1][0])
    assert math.isclose(at_step.low, k * team.curve[-1][0])
