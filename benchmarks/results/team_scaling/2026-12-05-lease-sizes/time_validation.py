"""Time the check of an answer's paths as they arrive (JSON lists of [x, y]), on captured answers
(capture_rebases.py). time_validation.py CHECKOUT PICKLE"""

import json
import pickle
import sys
import time

sys.path.insert(0, sys.argv[1])
from tasks.registry import create_task

cap = pickle.load(open(sys.argv[2], "rb"))
task = create_task("routing", {"blocks": 17, "map": "random-32-32-10", "robots": 300, "seed": 2})
xy = task.grid.xy
bodies = [
    json.loads(json.dumps([None if p is None else [list(xy(c)) for c in p] for p in value]))
    for _paths, _robots, value in cap
]
best = []
for _ in range(5):
    t0 = time.process_time()
    out = [task.validate(0, body) for body in bodies]
    best.append(time.process_time() - t0)
written = [p for v in out for p in v if p is not None]
print(sys.argv[1], "answers", len(bodies), "best ms/answer %.2f" % (1000 * min(best) / len(bodies)),
      "paths", len(written), "checksum", sum(sum(p) for p in written))
