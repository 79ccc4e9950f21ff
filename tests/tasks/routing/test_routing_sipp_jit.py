"""The compiled SIPP (tasks/routing/sipp_jit.py) and the array mirror of the reservation table it reads.

The mirror is made at a table's first compiled search and then follows every change of the dicts; a
mirror that drifted would make SIPP plan through robots it no longer sees. The compiled search must
return the very path of the Python one (``sipp_search_python``) whatever was changed since the mirror
was made, including runs later than the mirror's first horizon (it widens).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.routing.grid import UNREACHABLE, Grid
from tasks.routing.reservations import Reservations
from tasks.routing.sipp import sipp_search, sipp_search_python
from tests.routing_reference import mirror_matches
from tests.tasks.routing.test_routing_sipp import _grid, _walk  # random grids and walks, as there


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    width=st.integers(1, 7),
    height=st.integers(2, 7),
    density=st.sampled_from([0.0, 0.2]),
    changes=st.integers(1, 25),
    slack=st.sampled_from([None, -1, 0, 2, 8]),
    seed=st.integers(0, 10**6),
    salt=st.sampled_from([0, 1, 977, 2**32 - 1]),
)
def test_the_compiled_search_follows_every_change_of_the_table(
    width: int, height: int, density: float, changes: int, slack: int | None, seed: int, salt: int
) -> None:
    rng = random.Random(seed)
    grid = _grid(width, height, density, rng)
    free = [c for c in range(grid.n_cells) if grid.free[c]]
    if len(free) < 2:
        return
    start, goal = rng.sample(free, 2)
    table = Reservations(grid.n_cells)
    added: list[tuple[int, list[int], bool]] = []
    mirror_at = rng.randrange(changes)
    for step in range(changes):
        if step == mirror_at:
            table.arrays(grid.width)  # the mirror is made mid-way, as by a first search
        if added and rng.random() < 0.35:
            t0, run, arrives = added.pop(rng.randrange(len(added)))
            table.remove_run(t0, run, arrives)
        else:
            run = _walk(grid, rng, free, rng.randint(0, 12))
            t0 = rng.choice([0, 1, 2, 5, 70])  # 70: past the mirror's first horizon of 64
            if t0 == 0 and run[0] == start:
                t0 = 1
            arrives = run[-1] != goal and rng.random() < 0.5
            table.add_run(t0, run, arrives)
            added.append((t0, run, arrives))
    assert mirror_matches(table, grid.width), "the mirror drifted from the dicts"
    if grid.distances(goal)[start] == UNREACHABLE:
        return
    max_len = 3 * grid.n_cells + 100
    bound = None if slack is None else grid.distances(goal)[start] + slack
    expected = sipp_search_python(
        grid, start, goal, table.copy(), max_len, expansions=10**7, bound=bound, salt=salt
    )
    got = sipp_search(grid, start, goal, table, max_len, expansions=10**7, bound=bound, salt=salt)
    assert got == expected


def test_a_copy_has_its_own_mirror() -> None:
    grid = Grid.from_rows(["....", "...."])
    table = Reservations(grid.n_cells)
    table.add_path((0, 1, 2))
    copy = table.copy()
    table.arrays(grid.width)
    copy2 = table.copy()
    copy2.add_path((4, 5, 6, 7))
    assert copy.mirror is None and table.mirror is not None and copy2.mirror is not None
    assert not table.mirror.occupied[5].any()  # the copy's robot is not in the original
    assert copy2.mirror.occupied[5, 1] == 1


def test_a_search_cut_short_says_a_path_may_exist() -> None:
    """The expansion budget and a passed deadline answer (None, False): no proof that there is no path.
    Here a robot parks on the goal, so the full search proves there is none (None, True) after visiting
    every safe interval it can reach by ``max_len``."""
    grid = Grid.from_rows(["." * 40] * 40)
    table = Reservations(grid.n_cells)
    for x in range(0, 40, 2):  # robots sweeping columns cut the timelines into many intervals
        for t0 in (1, 50):
            table.add_run(t0, [grid.cell(x, y) for y in range(40)], arrives=False)
    start, goal = grid.cell(1, 0), grid.cell(39, 39)
    table.add_run(0, [grid.cell(39, 36), grid.cell(39, 37), grid.cell(39, 38), goal], arrives=True)
    assert sipp_search(grid, start, goal, table, 300, expansions=10**7) == (None, True)
    assert sipp_search(grid, start, goal, table, 300, expansions=1) == (None, False)
    assert sipp_search(grid, start, goal, table, 300, deadline=time.perf_counter() - 1) == (None, False)


def test_after_warm_a_routing_proposal_and_its_scoring_compile_nothing(tmp_path: Path) -> None:
    """The kind's warm-up (``RoutingTask.warm_up``: the coordinator's while it prepares a task, an agent's
    after joining, the test session's first step) leaves nothing for a proposal to compile inside its time
    budget, nor for the coordinator's scoring and rebase of it: in a fresh process, numba records no
    compilation while a routing proposer repairs and searches a plan that starts with collisions and the
    task scores and settles what it found. A kernel left out of ``warm`` once made a fresh clone's first
    routing proposal spend its 0.5 s compiling, and find nothing. With numba's cache empty, as on a fresh
    clone (a kernel loaded from the cache is no compilation)."""
    code = (
        "from numba.core.event import install_recorder\n"
        "from coordinator.engine.contract import contract_envelope\n"
        "from coordinator.engine.rounds import RoundEngine\n"
        "from tasks.registry import create_task\n"
        "task = create_task('routing', {'robots': 12, 'blocks': 1, 'seed': 0, 'initial': 'shortest'})\n"
        "task.warm_up()\n"
        "snap = RoundEngine(task).initial_snapshot()\n"
        "contract = contract_envelope(task, snap, 0)\n"
        "proposer = task.make_proposer(task.ProposerParams(time_budget=1.0), seed=1)\n"
        "with install_recorder('numba:compile') as compiled:\n"
        "    draft = proposer.propose(contract)\n"
        "    value = task.validate(0, draft.value)\n"
        "    task.evaluate_change(snap.state, {0: value})\n"
        "    task.rebase(snap.state, 0, value)\n"
        "print(draft is not None, len(compiled.buffer))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["True", "0"], done.stdout
