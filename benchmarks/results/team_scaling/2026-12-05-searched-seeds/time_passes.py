"""A stale answer's two passes on captured answers (capture_rebases.py of ../2026-12-05-lease-sizes): scoring
it as it came, the rebase, and scoring what the rebase kept, each timed alone (best of 5 passes).

time_passes.py CHECKOUT PICKLE"""

import pickle
import sys
import time

sys.path.insert(0, sys.argv[1])
from tasks.registry import create_task  # noqa: E402

captured = pickle.load(open(sys.argv[2], "rb"))
task = create_task("routing", {"blocks": 17, "map": "random-32-32-10", "robots": 300, "seed": 2})
items = [(task.state_of(tuple(p), (tuple(r), *task.inst.blocks[1:])), v) for p, r, v in captured]
written = sum(sum(1 for x in v if x is not None) for _, v in items) / len(items)
print(f"{len(items)} answers, {written:.1f} robots written per answer")
for name in ("as it came", "rebase", "what it kept"):
    best = []
    for _ in range(5):
        spent = 0.0
        for state, value in items:
            task._last_change = None
            t0 = time.process_time()
            task.evaluate_change(state, {0: value})
            t1 = time.process_time()
            kept = task.rebase(state, 0, value)
            t2 = time.process_time()
            if kept is not None:
                task.evaluate_change(state, {0: kept})
            t3 = time.process_time()
            spent += {"as it came": t1 - t0, "rebase": t2 - t1, "what it kept": t3 - t2}[name]
        best.append(spent)
    print(f"{name}: {1000 * min(best) / len(items):.2f} ms an answer")
