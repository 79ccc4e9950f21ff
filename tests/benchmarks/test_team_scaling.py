"""The virtual-core replay (benchmarks/lib/virtual_team.py) keeps its invariants, and says when broken.

A replay that handled an event out of virtual-time order, or ran two coordinator calls at once, would
measure a schedule no machine can run: its figures would be wrong without looking wrong.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import team_scaling
from benchmarks.lib.routing import check
from benchmarks.lib.virtual_team import (
    Event,
    EventQueue,
    OutOfOrder,
    ReplayConfig,
    ServerCore,
    check_calls,
    check_order,
    replay,
)
from tasks.registry import create_task
from tasks.routing import RoutingTask

TINY = {
    "map": "generated",
    "width": 10,
    "height": 10,
    "density": 0.1,
    "robots": 8,
    "seed": 3,
    "blocks": 3,
    "exact_limit": 0.0,
    "initial_repair": 1.0,
}


@pytest.fixture(scope="module")
def tiny_replay():  # type: ignore[no-untyped-def]
    wall = time.perf_counter
    result = replay(
        ReplayConfig(
            kind="routing", params=TINY, agents=2, seconds=3.0, seed=1, agent_start=0.1,
            knobs={"time_budget": 0.05},
        )
    )  # fmt: skip
    assert time.perf_counter is wall  # the CPU-time budgets end with the replay
    return result


def test_tiny_replay_handles_events_in_time_order(tiny_replay) -> None:  # type: ignore[no-untyped-def]
    handled = tiny_replay.handled
    assert len(handled) > 10
    assert handled == sorted(handled)
    # nothing past the horizon: 3 s after the task's creation, which began within the create call
    assert handled[-1] < 3.0 + tiny_replay.create_cpu


def test_tiny_replay_runs_one_coordinator_call_at_a_time(tiny_replay) -> None:  # type: ignore[no-untyped-def]
    calls = tiny_replay.calls
    kinds = {what for *_, what in calls}
    assert {"create", "lease", "tick"} <= kinds and kinds & {"submit", "abandon"}
    for (_, _, end, _), (arrival, begin, _, _) in zip(calls, calls[1:], strict=False):
        assert begin >= end  # never two at once
        assert begin == pytest.approx(max(arrival, end))  # FIFO: as soon as it arrived and the core is free
    busy = sum(end - begin for _, begin, end, _ in calls)
    assert busy <= calls[-1][2]


def test_tiny_replay_curve_never_rises_and_both_agents_worked(tiny_replay) -> None:  # type: ignore[no-untyped-def]
    times = [t for t, _ in tiny_replay.curve]
    objectives = [o for _, o in tiny_replay.curve]
    assert times == sorted(times)
    assert objectives == sorted(objectives, reverse=True)
    assert all(cpu > 0 for cpu in tiny_replay.agent_cpu) and len(tiny_replay.agent_cpu) == 2
    assert tiny_replay.proposals + tiny_replay.abandoned > 2


def test_tiny_replay_ends_once_its_head_reaches_stop_at(tiny_replay) -> None:  # type: ignore[no-untyped-def]
    reachable = tiny_replay.commits[0][1]  # the first merge's objective: any run of this seed gets there
    stopped = replay(
        ReplayConfig(
            kind="routing", params=TINY, agents=2, seconds=3.0, seed=1, agent_start=0.1,
            knobs={"time_budget": 0.05}, stop_at=reachable,
        )
    )  # fmt: skip
    assert stopped.status == "target_reached"
    assert stopped.commits[-1][1] <= reachable < min(o for _, o in stopped.commits[:-1] or [(0, 1e18)])
    assert stopped.seconds == stopped.commits[-1][0] < 3.0
    assert stopped.handled[-1] <= stopped.seconds
    never = replay(
        ReplayConfig(
            kind="routing", params=TINY, agents=2, seconds=1.0, seed=1, agent_start=0.1,
            knobs={"time_budget": 0.05}, stop_at=0.0,
        )
    )  # fmt: skip
    assert never.status != "target_reached" and never.seconds == 1.0


def test_the_replays_final_plan_passes_the_independent_validator(tiny_replay) -> None:  # type: ignore[no-untyped-def]
    task = create_task("routing", TINY)
    assert isinstance(task, RoutingTask)
    plan = check(task, tiny_replay.solution["paths"])
    assert plan.valid and plan.soc == tiny_replay.curve[-1][1]
    broken = [list(p) for p in tiny_replay.solution["paths"]]
    broken[1] = broken[0]  # two robots on one path: the check must say so
    assert not check(task, broken).valid


@pytest.fixture(scope="module")
def slow_model_replay():  # type: ignore[no-untyped-def]
    """Two simulated-LLM agents whose every call takes at least 12 s of serving latency, longer than a lease
    lives unrenewed (10 s), on a plan with collisions to repair."""
    return replay(
        ReplayConfig(
            kind="routing", params=TINY | {"initial": "shortest"}, agents=2, seconds=60.0, seed=1,
            agent_start=0.1, knobs={"time_budget": 0.05}, proposer="simulated-llm",
            proposer_options={"concurrent_streams": "2", "overhead_s": "12"},
        )
    )  # fmt: skip


def test_a_served_model_latency_is_on_the_agent_clock(slow_model_replay, tiny_replay) -> None:  # type: ignore[no-untyped-def]
    """A call of a simulated LLM takes its latency of virtual time, not the heuristic's CPU: at 12 s or more
    a call, two agents make at most 2 x 60 / 12 calls in 60 s, where the heuristic alone makes several a
    second. Its lease is renewed meanwhile, as the worker renews it, so its answers count."""
    r = slow_model_replay
    calls = r.proposals + r.abandoned
    assert 2 <= calls <= 2 * (60 // 12)
    assert (tiny_replay.proposals + tiny_replay.abandoned) / 3.0 > 3 * calls / 60.0
    assert all(served > 3 * cpu for served, cpu in zip(r.agent_served, r.agent_cpu, strict=True))
    assert r.accepted >= 1 and r.curve[-1][1] < r.curve[0][1]
    assert sum(1 for *_, what in r.calls if what == "renew") >= calls
    assert tiny_replay.agent_served == [0.0, 0.0] and tiny_replay.tokens == []


def test_a_served_model_tokens_are_counted_when_its_calls_end(slow_model_replay) -> None:  # type: ignore[no-untyped-def]
    """Tokens by time: every call's prompt and answer, found nothing or not, in time order."""
    times = [t for t, _ in slow_model_replay.tokens]
    spent = [n for _, n in slow_model_replay.tokens]
    assert len(times) >= slow_model_replay.proposals + slow_model_replay.abandoned
    assert times == sorted(times) and spent == sorted(spent) and spent[0] > 0
    run = {"tokens": slow_model_replay.tokens}
    assert team_scaling.tokens_by(run, times[1]) == f"{spent[1]:,}"
    assert team_scaling.tokens_by(run, None) == "-" and team_scaling.tokens_by({}, 5.0) == "-"


def test_an_event_out_of_order_is_refused() -> None:
    q = EventQueue()
    q.push(1.0, "lease", 0)
    q.push(2.0, "submit", 1)
    assert q.pop().at == 1.0
    assert q.pop().at == 2.0
    with pytest.raises(OutOfOrder, match="handled after"):
        q.accept(Event(1.5, 99, "submit", 0))  # fed behind the clock
    with pytest.raises(OutOfOrder, match="before now"):
        q.push(1.9, "lease", 0)  # an answer cannot arrive before the event that caused it


def test_two_coordinator_calls_at_once_are_refused() -> None:
    core = ServerCore()
    core.start(0.0)
    with pytest.raises(OutOfOrder, match="while the one"):
        core.start(0.5)


def test_the_checks_fail_on_broken_schedules() -> None:
    check_order([0.0, 1.0, 1.0, 2.0])
    with pytest.raises(OutOfOrder):
        check_order([0.0, 2.0, 1.0])
    check_calls([(0.0, 0.0, 1.0, "a"), (0.5, 1.0, 1.5, "b"), (3.0, 3.0, 3.1, "c")])
    with pytest.raises(OutOfOrder, match="before the core was free"):  # overlap: two calls at once
        check_calls([(0.0, 0.0, 1.0, "a"), (0.5, 0.5, 1.5, "b")])
    with pytest.raises(OutOfOrder, match="served after"):  # not FIFO
        check_calls([(1.0, 1.0, 2.0, "a"), (0.5, 2.0, 2.5, "b")])
    with pytest.raises(OutOfOrder, match="with the core free"):  # an idle core made a request wait
        check_calls([(0.0, 0.0, 1.0, "a"), (2.0, 2.5, 3.0, "b")])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 5), st.floats(0, 2)), min_size=1, max_size=30))
def test_queue_and_core_keep_order_under_any_schedule(jobs: list[tuple[float, float]]) -> None:
    """Whatever the arrivals and CPU times, popping serves in time order and the core never overlaps."""
    q, core = EventQueue(), ServerCore()
    for at, _cpu in jobs:
        q.push(at, "request")
    cpus = [c for _, c in jobs]
    served = 0
    while q:
        event = q.pop()
        core.start(event.at)
        end = core.finish(cpus[served % len(cpus)], event.kind)
        if served < len(jobs):  # each answer comes back as a new request, after the reply
            q.push(end + cpus[-1 - served % len(cpus)], "answer")
        served += 1
    assert served == 2 * len(jobs)
    check_order(q.handled)
    check_calls(core.calls)


def test_bad_command_line_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert team_scaling.main(["virtual", "--agents", "0", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--agents must be positive" in err
    assert team_scaling.main(["virtual", "--time", "30", "--target-time", "60"]) == 2
    assert "beyond one agent's run (30 s)" in capsys.readouterr().err
    assert team_scaling.main(["virtual", "--time", "90", "--time-of", "1=30", "--target-time", "60"]) == 2
    assert "beyond one agent's run (30 s)" in capsys.readouterr().err
    assert team_scaling.main(["virtual", "--time-of", "4:30"]) == 2
    assert "expected N=SECONDS, got '4:30'" in capsys.readouterr().err
    assert team_scaling.main(["virtual", "--stop-at", "1:7000"]) == 2
    assert "expected SEED=OBJECTIVE, got '1:7000'" in capsys.readouterr().err
    assert team_scaling.main(["virtual", "--knob", "stop_after"]) == 2
    assert "expected NAME=VALUE, got 'stop_after'" in capsys.readouterr().err
    assert team_scaling.main(["virtual", "--param", "blocks"]) == 2
    assert "expected NAME=VALUE, got 'blocks'" in capsys.readouterr().err
    assert team_scaling.main(["virtual", "--jobs", "0"]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err
    assert team_scaling.main(["table"]) == 2
    assert "needs one or more raw result files" in capsys.readouterr().err
    assert team_scaling.main(["sideways"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_time_to_target_and_value_at_read_a_step_curve() -> None:
    curve = [(0.0, 10.0), (2.0, 8.0), (5.0, 7.0)]
    assert team_scaling.value_at(curve, 1.9) == 10.0
    assert team_scaling.value_at(curve, 5.0) == 7.0
    assert team_scaling.time_to(curve, 8.0) == 2.0
    assert team_scaling.time_to(curve, 6.0) is None


def _run(agents: int, seed: int, curve: list[tuple[float, float]]) -> dict[str, object]:
    return {
        "mode": "virtual", "agents": agents, "seed": seed, "curve": curve, "rejected_by_reason": {},
        "abandoned": 0, "proposals": 10, "busy_fraction": 0.5, "cpu_per_commit_ms": 100.0,
    }  # fmt: skip


def test_shape_lines_say_when_the_team_does_not_pay_and_when_it_does() -> None:
    one = [(0.0, 100.0), (10.0, 90.0), (30.0, 80.0)]
    two = [(0.0, 100.0), (5.0, 90.0), (20.0, 80.0)]  # S(2) = 2 at Q = 90
    slow = [(0.0, 100.0), (20.0, 90.0), (30.0, 85.0)]  # S = 0.5, behind one at 30 s
    fast = [(0.0, 100.0), (1.0, 90.0), (30.0, 70.0)]  # S = 10, ahead at 30 s
    lines = team_scaling.table([_run(1, 1, one), _run(2, 1, two), _run(12, 1, slow)], [30.0], 10.0)
    assert "  shape: 12 agents behind one at 30 s on 1 of 1 seeds" in lines
    assert "  shape: S(12) 0.50 below S(2) 2.00 (medians)" in lines
    lines = team_scaling.table([_run(1, 1, one), _run(2, 1, two), _run(12, 1, fast)], [30.0], 10.0)
    assert "  shape: 12 agents behind one at 30 s on 0 of 1 seeds" in lines
    assert "  shape: S(12) 10.00 NOT below S(2) 2.00 (medians)" in lines


def test_goal_lines_fail_where_the_team_falls_short() -> None:
    """Issue 31's done-when, read off the medians: each goal met or not, and S falling as N grows named."""
    S = team_scaling.Speed
    met = team_scaling.goal_checks({1: S(1.0), 4: S(3.2), 8: S(5.5), 16: S(8.1)})
    assert met == [
        "  goal: S(4) 3.20 >= 3",
        "  goal: S(8) 5.50 >= 5",
        "  goal: S(16) 8.10 >= 8",
        "  goal: S never falls as N grows",
    ]
    short = team_scaling.goal_checks({1: S(1.0), 4: S(2.4), 8: S(2.1)})
    assert "  goal: S(4) 2.40 BELOW 3" in short and "  goal: S(8) 2.10 BELOW 5" in short
    assert "  goal: S falls: S(4) 2.40 > S(8) 2.10" in short


def test_simulated_llm_teams_are_held_to_the_research_claim() -> None:
    """Six simulated GPT-OSS-120B agents reach one agent's objective in half its time, or it says not."""
    S = team_scaling.Speed
    goals = team_scaling.GOALS["simulated-llm"]
    assert team_scaling.goal_checks({1: S(1.0), 6: S(2.4)}, goals)[0] == "  goal: S(6) 2.40 >= 2"
    assert team_scaling.goal_checks({1: S(1.0), 6: S(1.3)}, goals)[0] == "  goal: S(6) 1.30 BELOW 2"


def test_a_median_that_never_reached_q_is_a_bound_not_zero() -> None:
    """Teams that stopped before Q have S below T1 / their run: the median of three such runs is the middle
    bound; a bound under the goal is BELOW it, one over it decides nothing, and it shows a fall only from a
    known S above it."""
    S = team_scaling.Speed
    bounds = [S(3.61, below=True), S(2.65, below=True), S(3.28, below=True)]
    assert str(team_scaling.median_speed(bounds)) == "<3.28"
    assert str(team_scaling.median_speed([S(3.59), S(2.96, below=True), S(3.12)])) == "3.12"
    lines = team_scaling.goal_checks({2: S(4.49), 4: S(3.57), 8: S(3.28, below=True), 16: S(9.0, below=True)})
    assert "  goal: S(8) <3.28 BELOW 5" in lines
    assert "  goal: S(16) <9.00 UNDECIDED (runs too short) 8" in lines
    assert "  goal: S falls: S(2) 4.49 > S(4) 3.57; S(4) 3.57 > S(8) <3.28" in lines
    hidden = team_scaling.goal_checks({4: S(3.0, below=True), 8: S(2.0)})
    assert "  goal: S not known to fall, but a bound may hide a fall: S(4) <3.00 to S(8) 2.00" in hidden
    hidden = team_scaling.goal_checks({4: S(3.0), 8: S(5.0, below=True)})
    assert "  goal: S not known to fall, but a bound may hide a fall: S(4) 3.00 to S(8) <5.00" in hidden


def test_a_team_that_never_reached_q_shows_a_bound() -> None:
    """A team run shorter than one agent's T1 that never reached Q: S is below T1 / its length, not 0."""
    assert team_scaling.speed_cell(0.0, 120.0, 40.0) == "<3.00"
    assert team_scaling.speed_cell(2.5, 120.0, 40.0) == "2.50"
    assert team_scaling.speed_cell(None, None, 40.0) == "-"


def test_raw_file_keeps_the_command_line_including_team_multiples(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``--param blocks=2N`` reaches the runs as 2 x the team, and the raw file records it."""
    out = tmp_path / "raw.json"
    args = team_scaling.parse(
        [
            "virtual",
            "--param",
            "blocks=2N",
            "initial_repair=3",
            "initial=shortest",
            "regroup=false",
            "--out",
            str(out),
        ]
    )
    given = dict(args.param)
    assert given["blocks"].of(8) == 16 and given["initial_repair"] == 3 and given["initial"] == "shortest"
    assert given["regroup"] is False
    team_scaling.write(args, [])
    saved = json.loads(out.read_text())["config"]
    assert saved["param"] == [
        ["blocks", "PerAgent(k=2.0)"], ["initial_repair", 3], ["initial", "shortest"], ["regroup", False]
    ]  # fmt: skip


def test_q_from_several_one_agent_runs_is_their_median() -> None:
    """Runs of one seed differ by tens at k = 300: Q pooled from three runs is the middle one's objective,
    and T1 the middle of their times to it (the run that never got there counts as never)."""
    good = [(0.0, 100.0), (10.0, 80.0), (30.0, 70.0)]
    middle = [(0.0, 100.0), (20.0, 80.0), (30.0, 75.0)]
    bad = [(0.0, 100.0), (25.0, 90.0), (30.0, 85.0)]
    runs = [_run(1, 1, c) for c in (good, middle, bad)]
    assert team_scaling.one_agent_target(runs, 30.0) == (75.0, 30.0)  # reached at 20 s (good), 30 s, never
    assert team_scaling.one_agent_target(runs[:1], 30.0) == (70.0, 30.0)
    team = _run(4, 1, [(0.0, 100.0), (5.0, 74.0)])
    lines = team_scaling.table([runs[0], team], [30.0], 30.0, repeats=runs[1:])
    assert "seed 1 75 (T1 30.0 s; median of 3 runs: 70 / 75 / 85)" in lines[0]
    assert any(line.split()[0] == "4" and "6.00" in line for line in lines)  # S(4) = 30 / 5


def test_a_file_with_several_runs_of_one_seed_is_tabled() -> None:
    """One-agent repeats hold two runs of a seed in one file: each gets its TN and S (it crashed on this)."""
    one = [(0.0, 100.0), (10.0, 80.0), (30.0, 80.0)]
    again = [(0.0, 100.0), (20.0, 85.0), (30.0, 84.0)]  # Q = 84 (upper median), T1 = 30 s (upper median)
    lines = team_scaling.table([_run(1, 1, one), _run(1, 1, again)], [30.0], 30.0)
    row = next(line for line in lines if line.startswith("  1 "))
    assert "10.0 / 30.0" in row and "3.00 / 1.00" in row


def test_repeats_of_a_team_in_two_files_get_a_table_each_unless_pooled(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two files with 16 agents on seed 1: by default each file keeps its own table (runs of different trees
    must not mix); with ``pool`` they are one row, both runs' S in it and the median of the two."""
    one = [(0.0, 100.0), (10.0, 80.0), (30.0, 80.0)]
    files = []
    for name, reached in (("a", 5.0), ("b", 10.0)):
        f = tmp_path / f"{name}.json"
        runs = [_run(16, 1, [(0.0, 100.0), (reached, 80.0)])] + ([_run(1, 1, one)] if name == "a" else [])
        f.write_text(json.dumps({"runs": runs}))
        files.append(f)
    apart = team_scaling.load_runs(files)
    assert sorted({r["mode"] for r in apart}) == ["virtual a", "virtual b"]
    pooled = team_scaling.load_runs(files, pool=True)
    lines = team_scaling.table(pooled, [30.0], 30.0)
    row = next(line for line in lines if line.startswith(" 16 "))
    assert "5.0 / 10.0" in row and "2.00 / 1.00 (1.00)" in row


def test_a_replayed_search_asks_what_merged_at_its_virtual_time() -> None:
    """A team's search asks its feed every few ms of its CPU: each ask is a coordinator call queued at its
    virtual time (after the call's lease, before its answer), served in order with the others; a call still
    waiting on an ask when the replay ends stops there (no thread left behind)."""
    import threading

    params = {"map": "random-32-32-10", "robots": 60, "blocks": 4, "exact_limit": 0, "initial": "shortest"}
    result = replay(
        ReplayConfig(
            kind="routing", params=params, agents=3, seconds=1.5, seed=1, agent_start=0.1,
            knobs={"time_budget": 0.2, "follow_every": 0.002},
        )
    )  # fmt: skip
    asks = [c for c in result.calls if c[3] == "changes"]
    assert len(asks) > 10
    check_calls(result.calls)
    check_order(result.handled)
    assert not [t for t in threading.enumerate() if t.name == "replayed-call" and t.is_alive()]
    quiet = replay(
        ReplayConfig(
            kind="routing", params=params, agents=3, seconds=1.5, seed=1, agent_start=0.1,
            knobs={"time_budget": 0.2, "follow_every": 0.0},
        )
    )  # fmt: skip
    assert not [c for c in quiet.calls if c[3] == "changes"]


def test_goals_are_also_read_from_every_run_where_repeats_allow_a_verdict() -> None:
    """With repeats (``--pool``), each goal is read from every pairing of a seed's runs: one run a side on
    one seed cannot decide it; three one-agent runs against three teams eight or more times faster can."""
    one = [[(0.0, 100.0), (t, 90.0)] for t in (100.0, 110.0, 115.0)]  # Q = 90, reached at 100-115 s
    fast = [[(0.0, 100.0), (t, 90.0)] for t in (10.0, 11.0, 12.0)]
    slow = [[(0.0, 100.0), (t, 90.0)] for t in (20.0, 21.0, 22.0)]
    single = team_scaling.table([_run(1, 1, one[0]), _run(16, 1, fast[0])], [30.0], 120.0)
    assert any(
        line.startswith("  samples, N = 16: S >= 8 in 100% of 1 pairings: undecided") for line in single
    )
    runs = [_run(1, 1, c) for c in one]
    lines = team_scaling.table([*runs, *(_run(16, 1, c) for c in fast)], [30.0], 120.0)
    assert any(line.startswith("  samples, N = 16: S >= 8 in 100% of 9 pairings: above") for line in lines)
    lines = team_scaling.table([*runs, *(_run(16, 1, c) for c in slow)], [30.0], 120.0)
    assert any(line.startswith("  samples, N = 16: S >= 8 in 0% of 9 pairings: below") for line in lines)


def test_pace_lines_read_each_team_run_against_its_own_seeds_one_agent_runs() -> None:
    """Per N, one agent's time to the team's head at each mark, each run against its own seed's runs (seed 2's
    one agent is twice as slow: read against seed 1's, the team would look half as fast there)."""
    one = [_run(1, 1, [(0.0, 100.0), (10.0, 90.0), (30.0, 80.0)]), _run(1, 2, [(0.0, 100.0), (20.0, 90.0)])]
    team = [_run(8, 1, [(0.0, 100.0), (2.0, 90.0)]), _run(8, 2, [(0.0, 100.0), (4.0, 90.0)])]
    lines = team_scaling.table([*one, *team], [5.0], 30.0)
    assert "  pace, N = 8 (2 runs), one agent's time to the team's head at 5 s: 15.0 s (x3.0)" in lines
