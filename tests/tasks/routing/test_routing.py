"""The routing kind: loading, bad input, the proposer, references, contracts, pictures and the CLI run."""

from __future__ import annotations

import json
from pathlib import Path as FsPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blockopt.cli import main
from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Snapshot
from tasks.base import InvalidProposal
from tasks.registry import InvalidParams, create_task, kinds
from tasks.routing import RoutingTask
from tasks.routing.astar import plan_path
from tasks.routing.grid import Grid
from tasks.routing.movingai import DATA
from tasks.routing.reservations import Reservations
from tasks.routing.validator import validate_plan


def routing(params: dict[str, object]) -> RoutingTask:
    task = create_task("routing", params)
    assert isinstance(task, RoutingTask)
    return task


def small(**kw: object) -> RoutingTask:
    return routing({"map": "empty-8-8", "robots": 6, "blocks": 2, "exact_limit": 0, **kw})


def test_kind_is_registered() -> None:
    assert kinds()["routing"] is RoutingTask


def test_movingai_instance_loads_bundled_and_by_path() -> None:
    by_name = routing({"map": "random-32-32-10", "scen": "random-1", "robots": 50, "blocks": 3})
    path = DATA / "maps" / "random-32-32-10.map"
    scen = DATA / "scen" / "random-32-32-10-random-1.scen"
    by_path = routing({"map": str(path), "scen": str(scen), "robots": 50, "blocks": 3})
    assert by_name.inst.starts == by_path.inst.starts and by_name.inst.goals == by_path.inst.goals
    assert by_name.grid.width == 32 and by_name.grid.height == 32
    # first scenario line: start (11, 6), goal (7, 18)
    assert by_name.grid.xy(by_name.inst.starts[0]) == (11, 6)
    assert by_name.grid.xy(by_name.inst.goals[0]) == (7, 18)
    assert sorted(r for b in by_name.inst.blocks for r in b) == list(range(50))


@pytest.mark.parametrize(
    ("params", "param", "words"),
    [
        ({"map": "no-such-map"}, "map", "unknown map"),
        ({"map": "/nonexistent/x.map"}, "map", "does not exist"),
        ({"map": "empty-8-8", "robots": 500}, "robots", "has only"),
        ({"map": "empty-8-8", "scen": "random-99"}, "scen", "unknown scenario"),
        ({"map": "empty-8-8", "robots": 4, "blocks": 5}, "blocks", "at most one block per robot"),
        ({"map": "generated", "width": 3, "height": 3, "robots": 20}, "robots", "connected free cells"),
    ],
)
def test_bad_instances_are_clear_invalid_params(params: dict[str, object], param: str, words: str) -> None:
    with pytest.raises(InvalidParams) as info:
        create_task("routing", params)
    assert info.value.param == param
    assert words in str(info.value)


def test_lower_bound_is_the_sum_of_bfs_distances_and_optimum_is_proven_small() -> None:
    task = routing({"map": "empty-8-8", "robots": 8, "blocks": 2, "exact_limit": 20})
    g = task.grid
    lb = sum(g.distances(t)[s] for s, t in zip(task.inst.starts, task.inst.goals, strict=True))
    assert task.lower_bound() == lb
    ref = task.reference()
    assert ref.kind == "optimum" and ref.value >= lb


def test_exact_optimum_beats_or_matches_heuristic_on_a_crowded_grid() -> None:
    from tasks.routing.exact import exact_optimum, prioritized_plan

    task = routing(
        {
            "map": "generated",
            "width": 6,
            "height": 6,
            "density": 0.1,
            "robots": 6,
            "seed": 3,
            "exact_limit": 0,
        }
    )
    plan = prioritized_plan(task.inst)
    assert plan is not None
    value, proven = exact_optimum(task.inst, task.lower_bound(), 20)
    assert proven and value is not None
    assert task.lower_bound() <= value <= sum(len(p) - 1 for p in plan)


def test_large_instances_get_a_lower_bound() -> None:
    task = routing({"map": "random-32-32-10", "robots": 20, "blocks": 2})
    assert task.reference().kind == "lower_bound"
    assert task.reference().value == task.lower_bound()


def test_validate_rejects_bad_proposals_with_reasons() -> None:
    task = small()
    state = task.initial_state()
    good = task.encode_value(task.block_value(state, 0))
    assert task.validate(0, good) == task.block_value(state, 0)
    n = len(good)
    first = good[0]
    fixed = small(neighbourhood_leases=False)  # a fixed partition: validate knows each block's size
    cases = {
        "wrong_block": (7, good),
        "bad_shape": (0, good[:-1]),
    }
    for code, (block, value) in cases.items():
        with pytest.raises(InvalidProposal) as info:
            fixed.validate(block, value)
        assert info.value.code == code
    # with neighbourhood leases a block's size changes at each lease: the head's block checks it
    with pytest.raises(InvalidProposal) as info:
        task.evaluate_change(state, {0: task.validate(0, good[:-1])})
    assert info.value.code == "bad_shape" and "needs a list of" in info.value.reason
    sx, sy = first[0]
    gx, gy = first[-1]
    side = [gx + 1, gy] if gx < 7 else [gx - 1, gy]
    bad_paths = {
        "jump": ([[sx, sy], [sx + 2 if sx < 5 else sx - 2, sy]] + first[1:], "illegal_move", "jump"),
        "start": ([side, [gx, gy]], "illegal_move", "starts at"),
        "goal": (first + [side], "illegal_move", "not at its goal"),
        "off map": (first + [[-1, gy]], "illegal_move", "off the map"),
        "shape": ([[sx, sy, 0]], "bad_shape", "pair of integers"),
        "bool": ([[sx, sy], [True, sy]], "bad_shape", "pair of integers"),
        "float": ([[float(sx), sy]], "bad_shape", "pair of integers"),
    }
    for name, (path, code, words) in bad_paths.items():
        with pytest.raises(InvalidProposal) as info:
            task.validate(0, [path] + good[1:n])
        assert info.value.code == code, name
        assert words in info.value.reason, name


def test_dump_and_load_state_round_trip() -> None:
    task = small()
    state = task.initial_state()
    data = json.loads(json.dumps(task.dump_state(state)))
    again = task.load_state(data)
    assert again.paths == state.paths
    assert task.objective(again) == task.objective(state)
    # The report's solution ([x, y] pairs, as stores before cell numbers kept it) loads too.
    assert task.load_state(json.loads(json.dumps(task.solution(state)))).paths == state.paths


@pytest.mark.parametrize(
    ("cells", "code", "words"),
    [
        ([[0, 1.5]], "bad_shape", "list of cell numbers"),
        ("0 1", "bad_shape", "list of cell numbers"),
        ([[-1]], "illegal_move", "off the map"),
        ([[10_000]], "illegal_move", "off the map"),
    ],
)
def test_a_stored_state_with_bad_cells_is_refused_with_the_reason(cells: Any, code: str, words: str) -> None:
    task = small()
    data = task.dump_state(task.initial_state())
    data["cells"] = cells + data["cells"][len(cells) :] if isinstance(cells, list) else cells
    with pytest.raises(InvalidProposal) as info:
        task.load_state(data)
    assert info.value.code == code and words in info.value.reason


def test_astar_avoids_vertex_and_edge_conflicts_when_it_can() -> None:
    grid = Grid.from_rows(["....", "....", "...."])
    table = Reservations(grid.n_cells)
    # another robot walks right to left along the middle row, head-on
    table.add_path(tuple(grid.cell(x, 1) for x in (3, 2, 1, 0)))
    found = plan_path(grid, grid.cell(0, 1), grid.cell(3, 1), table, max_len=50)
    assert found is not None
    path, conflicts = found
    assert conflicts == 0
    assert len(path) - 1 >= 5  # it must side-step: the straight line (3 steps) collides


def test_astar_counts_unavoidable_conflicts() -> None:
    grid = Grid.from_rows(["...."])
    table = Reservations(grid.n_cells)
    table.add_path((grid.cell(1, 0),))  # a robot parked in the only corridor
    found = plan_path(grid, grid.cell(0, 0), grid.cell(3, 0), table, max_len=50)
    assert found is not None
    path, conflicts = found
    assert conflicts == 1 and len(path) == 4


def test_contract_holds_the_block_and_a_restricted_reservation_table() -> None:
    task = routing({"map": "random-32-32-10", "robots": 50, "blocks": 5, "margin": 1})
    state = task.initial_state()
    data = task.contract(state, 0)
    assert [r["id"] for r in data["robots"]] == list(task.inst.blocks[0])
    res = data["reservations"]
    assert 0 < res["size"] < res["plan_size"]
    x0, y0, x1, y1 = data["region"]
    for _robot, _t0, cells, _arrives in res["moves"]:
        assert all(x0 <= x <= x1 and y0 <= y <= y1 for x, y in cells)
    json.dumps(data)


def test_proposer_removes_conflicts_and_predicts_honestly() -> None:
    # every robot on its shortest path: the prioritized start would leave nothing to remove
    task = routing({"map": "empty-16-16", "robots": 30, "blocks": 1, "exact_limit": 0, "initial": "shortest"})
    state = task.initial_state()
    assert state.conflicts > 0
    snap = Snapshot(0, task.objective(state), (0,), state)
    proposer = task.make_proposer(task.ProposerParams(time_budget=1.0), seed=1)
    draft = proposer.propose(contract_envelope(task, snap, 0))
    assert draft is not None
    value = task.validate(0, draft.value)
    actual = task.objective(state) - task.evaluate_change(state, {0: value})
    assert draft.predicted_improvement == actual  # one block sees everything: δ = 0
    after = task.apply(state, {0: value})
    assert after.conflicts < state.conflicts


def test_pictures_are_written(tmp_path: FsPath) -> None:
    task = small()
    files = task.pictures(task.initial_state(), str(tmp_path / "plan"))
    assert [FsPath(f).suffix for f in files] == [".png", ".gif"]
    assert all(FsPath(f).stat().st_size > 1000 for f in files)


def test_validator_reports_structural_errors() -> None:
    rows = ["...", ".@.", "..."]
    verdict = validate_plan(rows, [(0, 0)], [(2, 2)], [[(0, 0), (1, 1), (2, 2)]])
    assert not verdict.valid and any("blocked" in e for e in verdict.errors)
    verdict = validate_plan(
        rows, [(0, 0), (2, 0)], [(2, 0), (0, 0)], [[(0, 0), (1, 0), (2, 0)], [(2, 0), (1, 0), (0, 0)]]
    )
    assert not verdict.valid and len(verdict.vertex_conflicts) == 1


def test_cli_run_solves_a_small_instance(tmp_path: FsPath, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    code = main(
        [
            "run",
            "routing",
            "--map",
            "empty-16-16",
            "--robots",
            "12",
            "--agents",
            "2",
            "--merge",
            "independent",
            "--seed",
            "1",
            "--time-limit",
            "20",
            "--inproc",
            "--time-budget",
            "0.1",
            "--patience",
            "0",
            "--exact-limit",
            "0",
            "--quiet",
            "--report",
            str(report),
        ]
    )
    assert code == 0
    data = json.loads(report.read_text())
    assert data["feasible"] is True
    assert data["objective"]["reference_kind"] == "lower_bound"
    assert data["task"]["blocks"] == 2
    for suffix in ("-plan.png", "-moves.gif", "-convergence.png"):
        assert (tmp_path / f"r{suffix}").stat().st_size > 1000


def test_cli_rejects_unknown_map(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "routing", "--map", "nowhere", "--agents", "2"]) == 2
    assert "unknown map" in capsys.readouterr().err


@pytest.mark.parametrize(("robots", "blocks"), [(9, 4), (10, 10), (7, 3), (50, 6)])
def test_spatial_partition_gives_nonempty_balanced_blocks(robots: int, blocks: int) -> None:
    from tasks.routing.partition import spatial

    points = [(float(i % 5), float(i // 5)) for i in range(robots)]
    groups = spatial(points, blocks, seed=1)
    assert sorted(i for g in groups for i in g) == list(range(robots))
    assert all(groups) and max(map(len, groups)) - min(map(len, groups)) <= max(1, robots // blocks)


def test_interaction_partition_cuts_less_and_keeps_sizes() -> None:
    from tasks.routing.instance import _interaction_weights
    from tasks.routing.partition import by_interaction, spatial

    task = small(map="random-32-32-10", robots=30, blocks=3, partition="spatial")
    weights = _interaction_weights(task.grid, task.inst.starts, task.inst.goals)
    start = [list(g) for g in task.inst.blocks]
    better = by_interaction(weights, start)

    def cut(groups: list[list[int]]) -> float:
        where = {i: b for b, g in enumerate(groups) for i in g}
        return sum(w for (i, j), w in weights.items() if where[i] != where[j])

    assert sorted(map(len, better)) == sorted(map(len, start))
    assert sorted(i for g in better for i in g) == list(range(30))
    assert cut(better) <= cut(start)
    assert spatial  # the default starting point of the interaction partition


def test_regrouping_puts_robots_that_hold_each_other_up_in_one_block() -> None:
    from coordinator.engine.records import Proposal
    from coordinator.engine.rounds import RoundEngine
    from tasks.routing.regroup import holding_up

    task = small(map="random-32-32-10", robots=50, blocks=3, partition="spatial")
    engine = RoundEngine(task)
    snap = engine.initial_snapshot()
    proposer = task.make_proposer(task.ProposerParams(time_budget=0.3), seed=1)
    while not task.feasible(snap.state):  # the heuristic's plan: collision-free, some robots detour or wait
        drafts = [proposer.propose(contract_envelope(task, snap, b, {})) for b in task.blocks()]
        proposals = [
            Proposal(
                id=f"p{snap.version}-{d.block}",
                agent="a",
                block=d.block,
                value=d.value,
                base_version=snap.version,
                predicted_improvement=d.predicted_improvement,
            )
            for d in drafts
            if d is not None
        ]
        snap = engine.run_round(snap, proposals, snap.version).snapshot
    state = snap.state
    weights = holding_up(task.grid, task.inst.starts, task.inst.goals, state.paths, state.index)
    assert weights, "some robots wait for others in this plan"

    def cut(blocks: tuple[tuple[int, ...], ...]) -> float:
        where = {r: b for b, rs in enumerate(blocks) for r in rs}
        return sum(w for (i, j), w in weights.items() if where[i] != where[j])

    out = engine.run_round(snap, [], 99, regroup=True)
    assert out.record.regrouped and out.committed and out.record.accepted == 0
    new = out.snapshot
    assert new.objective == snap.objective and new.state.paths == state.paths
    assert [len(b) for b in new.state.blocks] == [len(b) for b in state.blocks]
    assert sorted(r for b in new.state.blocks for r in b) == list(range(50))
    assert cut(new.state.blocks) < cut(state.blocks)
    assert new.block_versions == (snap.version + 1,) * 3
    # A proposal made for the old grouping is stale; the old robots' paths are refused as the wrong robots.
    moved = next(b for b in task.blocks() if new.state.blocks[b] != state.blocks[b])
    old_value = task.encode_value(task.block_value(state, moved))
    late = Proposal(
        id="late",
        agent="a",
        block=moved,
        value=old_value,
        base_version=snap.version,
        predicted_improvement=1.0,
    )
    assert engine.run_round(new, [late], 100).verdicts[0].code == "stale_base"
    with pytest.raises(InvalidProposal) as info:
        task.evaluate_change(new.state, {moved: task.validate(moved, old_value)})
    assert info.value.code == "wrong_robot" and "block's robots are" in info.value.reason
    # The grouping is part of the state: stored and loaded with it.
    again = task.load_state(json.loads(json.dumps(task.dump_state(new.state))))
    assert (
        again.blocks == new.state.blocks
        and task.contract(again, moved)["robots"][0]["id"] == new.state.blocks[moved][0]
    )
    assert (
        small(map="random-32-32-10", robots=50, blocks=3, partition="spatial", regroup=False).regroup(
            state, 0
        )
        is None
    )


def test_service_run_stops_when_the_team_finds_nothing_more(tmp_path: FsPath) -> None:
    """Real coordinator and agent processes: heuristic agents that find nothing report it, so the empty
    rounds close, the blocks are regrouped, and the run converges long before its time limit."""
    report = tmp_path / "r.json"
    code = main(
        [
            "run",
            "routing",
            "--map",
            "empty-16-16",
            "--robots",
            "16",
            "--agents",
            "2",
            "--merge",
            "checked",
            "--seed",
            "1",
            "--time-limit",
            "30",  # the stop rule then waits 6 s without a merge (a fifth of it) before `stalled`
            "--time-budget",
            "0.1",
            "--patience",
            "0",
            "--exact-limit",
            "0",
            "--quiet",
            "--report",
            str(report),
        ]
    )
    assert code == 0
    data = json.loads(report.read_text())
    assert data["status"] == "stalled" and data["feasible"] is True  # before its time limit
    assert data["proposals"]["abandoned"] >= 1  # the "nothing found" reports that closed the last rounds
    assert "regrouped" in data["history"][-1]


def test_a_block_at_its_optimum_stops_after_stop_after_idle_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A collision-free block whose LNS steps stop paying ends its proposal after ``stop_after`` of them,
    not at its budget (which doubles after a miss, up to 4x: the steps stay as many)."""
    from tasks.routing import repair

    task = routing({"map": "empty-16-16", "robots": 8, "blocks": 1, "exact_limit": 0})
    state = task.initial_state()
    assert state.conflicts == 0 and state.soc == task.lower_bound()  # nothing left to find
    steps: list[int] = []
    original = repair.BlockSearch.try_group

    def counted(self: repair.BlockSearch, group: list[int], deadline: float | None) -> tuple[bool, int, int]:
        steps.append(1)
        return original(self, group, deadline)

    monkeypatch.setattr(repair.BlockSearch, "try_group", counted)
    snap = Snapshot(0, task.objective(state), (0,), state)
    proposer = task.make_proposer(task.ProposerParams(time_budget=5.0, stop_after=5), seed=1)
    made = []
    for _ in range(3):
        steps.clear()
        assert proposer.propose(contract_envelope(task, snap, 0)) is None
        made.append(len(steps))
    assert made == [5, 5, 5]


@pytest.mark.parametrize(("blocks", "idle_at_the_end"), [(2, 6), (1, 100)])
def test_a_teams_proposal_that_gained_answers_answer_after_idle_steps_later(
    blocks: int, idle_at_the_end: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a team (its contract says ``answer_on_gain``), once a search has gained, ``answer_after`` steps in a
    row without a lower sum of costs end it, long before its budget: a sooner answer merges on a fresher
    plan. One agent's one block searches on to ``stop_after``: it has nobody to make room for."""
    from tasks.routing import repair

    task = routing({"map": "random-32-32-10", "robots": 100, "blocks": blocks, "exact_limit": 0})
    state = task.initial_state()
    assert state.conflicts == 0 and state.soc > task.lower_bound()  # something to find
    costs: list[int] = []
    original = repair.BlockSearch.try_group

    def counted(self: repair.BlockSearch, group: list[int], deadline: float | None) -> tuple[bool, int, int]:
        out = original(self, group, deadline)
        costs.append(self.soc)
        return out

    monkeypatch.setattr(repair.BlockSearch, "try_group", counted)
    snap = Snapshot(0, task.objective(state), (0,) * blocks, state)
    knobs = task.ProposerParams(time_budget=30.0, stop_after=100, answer_after=6)
    draft = task.make_proposer(knobs, seed=1).propose(contract_envelope(task, snap, 0))
    assert draft is not None and draft.predicted_improvement > 0
    before = [sum(len(state.paths[r]) - 1 for r in state.blocks[0]), *costs]  # the block before the steps
    last_gain = max(i for i in range(len(costs)) if costs[i] < before[i])
    assert len(costs) - 1 - last_gain == idle_at_the_end


STEPS = st.one_of(
    st.lists(st.integers(-2, 9), min_size=2, max_size=2),
    st.tuples(st.integers(-2, 9), st.integers(-2, 9)),
    st.lists(st.one_of(st.booleans(), st.floats(0, 7), st.integers(0, 7)), min_size=1, max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(STEPS, min_size=1, max_size=8), st.booleans())
def test_a_paths_quick_check_agrees_with_checking_each_rule(raw: list[Any], from_start: bool) -> None:
    """``_path`` takes the common steps in a few exact tests and the rest rule by rule (``_step``): every
    path, legal or not, gets what checking each rule at every step gives."""
    task = routing({"map": "random-32-32-10", "robots": 6, "blocks": 2, "exact_limit": 0})
    if from_start:  # a path that begins where a robot starts, so that some get far
        raw = [list(task.grid.xy(task.inst.starts[0])), *raw]

    def outcome(check: Any) -> Any:
        try:
            return check()
        except InvalidProposal as exc:
            return exc.code, exc.reason

    def rule_by_rule() -> Any:
        cells: list[int] = []
        for t, xy in enumerate(raw):
            cells.append(task._step("path 0", t, xy, cells))
        return task._path(0, [list(task.grid.xy(c)) for c in cells])

    assert outcome(lambda: task._path(0, raw)) == outcome(rule_by_rule)
