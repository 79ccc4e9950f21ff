"""An agent's late call, by what it costs: from the plan a 16-agent team had at 20 s (seed 2,
``../2026-12-06-late/stall-n16-s2-t20.json``), the same overlapping leases (60 robots) are searched by the
same seeded proposer with each ``stop_after`` given; the CPU per call and the answers. A call's fixed cost
(parse, reservation table, search set-up) is what ``stop_after`` 1 leaves.

Run from a checkout: PYTHONPATH=. .venv/bin/python THIS CALLS STOP_AFTER..."""

import json
import sys
import time
from pathlib import Path

from tasks.registry import create_task
from tasks.routing.lease import form_overlapping_lease

n_calls, stops = int(sys.argv[1]), [int(a) for a in sys.argv[2:]]
task = create_task("routing", {"blocks": 17, "map": "random-32-32-10", "robots": 300, "seed": 2})
stall = Path(__file__).parents[1] / "2026-12-06-late" / "stall-n16-s2-t20.json"
paths = tuple(tuple(p) for p in json.loads(stall.read_text())["paths"])
state = task.state_of(paths, task.initial_state().blocks)
texts = []
for i in range(n_calls):
    leased = form_overlapping_lease(task, state, i % 17, task.lease_robots, 1000 + i)
    data = task.contract(leased, i % 17)
    texts.append(f'{{"block": {i % 17}, "version": 0, "budget": {{}}, "data": {data.json}}}')
size = sum(map(len, texts)) / n_calls / 1000
print(f"{n_calls} leases of {task.lease_robots} robots, contracts of {size:.0f} KB")
for stop_after in stops:
    proposer = task.make_proposer(task.ProposerParams(stop_after=stop_after), 5)
    parse = 0.0
    t0 = time.thread_time()
    answers = []
    for text in texts:
        t1 = time.thread_time()
        contract = json.loads(text)
        parse += time.thread_time() - t1
        draft = proposer.propose(contract)
        if draft is not None:
            answers.append(round(draft.predicted_improvement))
    total = time.thread_time() - t0
    print(
        f"stop_after {stop_after:4}: {1000 * total / n_calls:6.1f} ms a call ({1000 * parse / n_calls:.1f} ms"
        f" parsing), answers {len(answers)} {answers}"
    )
