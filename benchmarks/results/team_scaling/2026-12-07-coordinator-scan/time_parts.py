"""A stale answer's cost in the engine, part by part, on captured answers: score it as it came, rebase it,
score what the rebase kept (best of 5 passes, ms an answer); then the checksum of the scores, which must
not change between trees.

    .venv/bin/python time_parts.py CHECKOUT PICKLE

PICKLE: ``2026-12-05-lease-sizes/capture_rebases.py``'s stale answers of a 16-agent replay.
"""

import pickle
import sys
import time

sys.path.insert(0, sys.argv[1])
from tasks.registry import create_task  # noqa: E402

cap = pickle.load(open(sys.argv[2], "rb"))
task = create_task("routing", {"blocks": 17, "map": "random-32-32-10", "robots": 300, "seed": 2})
items = [(task.state_of(tuple(p), (tuple(r), *task.inst.blocks[1:])), v) for p, r, v in cap]
best = [float("inf")] * 3
checksum = 0.0
for _ in range(5):
    parts = [0.0, 0.0, 0.0]
    checksum = 0.0
    for state, value in items:
        t0 = time.process_time()
        as_came = task.evaluate_change(state, {0: value})
        t1 = time.process_time()
        fixed = task.rebase(state, 0, value)
        t2 = time.process_time()
        kept = None if fixed is None else task.evaluate_change(state, {0: fixed})
        t3 = time.process_time()
        parts = [parts[0] + t1 - t0, parts[1] + t2 - t1, parts[2] + t3 - t2]
        checksum += as_came + (kept or 0.0)
    best = [min(b, x) for b, x in zip(best, parts, strict=True)]
shown = ", ".join(
    f"{name} {1000 * b / len(items):.2f}" for name, b in zip(("as came", "rebase", "kept"), best, strict=True)
)
print(sys.argv[1], f"{len(items)} answers, ms an answer: {shown}; checksum {checksum}")
