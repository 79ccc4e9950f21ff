"""Time what the engine does with a stale answer, on captured answers (capture_rebases.py): score it as it
came, rebase it, score what the rebase kept. time_scoring.py CHECKOUT PICKLE"""

import pickle
import sys
import time

sys.path.insert(0, sys.argv[1])
from tasks.registry import create_task

cap = pickle.load(open(sys.argv[2], "rb"))
params = {"blocks": 17, "map": "random-32-32-10", "robots": 300, "seed": 2}
task = create_task("routing", params)
items = []
for paths, robots, value in cap:
    state = task.state_of(tuple(paths), (tuple(robots), *task.inst.blocks[1:]))
    items.append((state, value))
best, scores = [], []
for _ in range(5):
    t0 = time.process_time()
    scores = []
    for state, value in items:
        as_came = task.evaluate_change(state, {0: value})
        fixed = task.rebase(state, 0, value)
        scores.append((as_came, None if fixed is None else task.evaluate_change(state, {0: fixed})))
    best.append(time.process_time() - t0)
print(sys.argv[1], "answers", len(items), "best ms/answer %.2f" % (1000 * min(best) / len(items)),
      "rebased", sum(1 for _, f in scores if f is not None), "checksum", sum(a + (f or 0) for a, f in scores))
