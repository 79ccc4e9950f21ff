"""One agent's proposer, searching the plan a 16-agent team stalled on: contract after contract, each answer
merged into the next contract as the coordinator would, for CPU_SECONDS of its thread's CPU. Run on two trees
side by side, it says whether the product's searches now walk off the plateau as one loop keeping its walk
does (2026-12-06-escape: 7,121 -> 7,091 / 7,096 in 30 s).

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS STALL_JSON SEED CPU_SECONDS [PROPOSER_SEED]
"""

import json
import sys
import time

from benchmarks.team_scaling import at_marks
from tasks.registry import create_task

stall, seed, cpu_limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
proposer_seed = int(sys.argv[4]) if len(sys.argv) > 4 else seed + 100

task = create_task("routing", {"blocks": 1, "map": "random-32-32-10", "robots": 300, "seed": seed})
paths = tuple(tuple(p) for p in json.load(open(stall))["paths"])
state = task.state_of(paths)
proposer = task.make_proposer(task.ProposerParams(), proposer_seed)
start = state.soc
t0 = time.thread_time()
searches = answers = resumed = 0
curve = [(0.0, start)]
while time.thread_time() - t0 < cpu_limit:
    contract = {"block": 0, "version": 0, "budget": {}, "data": task.contract(state, 0)}
    draft = proposer.propose(contract)
    searches += 1
    if draft is None:
        continue
    answers += 1
    resumed += int(draft.info.get("resumed", 0))
    cells = task.grid.cell
    moved = zip(state.paths, draft.value, strict=True)
    state = task.state_of(tuple(p if v is None else tuple(cells(x, y) for x, y in v) for p, v in moved))
    assert state.conflicts == 0
    curve.append((round(time.thread_time() - t0, 2), state.soc))
print(
    f"seed {seed} proposer seed {proposer_seed}: start {start}, end {state.soc} after {cpu_limit:g} s CPU,"
    f" {searches} searches, {answers} answers ({resumed} paths resumed in them); {at_marks(curve)}",
    flush=True,
)
