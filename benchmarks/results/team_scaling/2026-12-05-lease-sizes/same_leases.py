"""The robots of 300 overlapping leases of 60 drawn on seed 2's first plan (k = 300), three times over: a
hash of the members and the CPU per draw, cold (first pass) and warm. Run from each checkout, side by side:
PYTHONPATH=. .venv/bin/python THIS. The same hash means the same leases."""

import hashlib
import random
import time

from tasks.routing.lease import lease_members
from tasks.routing.task import RoutingTask

params = {"map": "random-32-32-10", "robots": 300, "seed": 2, "blocks": 17}
task = RoutingTask(RoutingTask.Params.model_validate(params))
state = task.initial_state()
digest = hashlib.sha256()
start = time.thread_time()
for attempt in list(range(300)) * 3:
    digest.update(str(lease_members(task, state, set(range(300)), 60, random.Random(attempt))).encode())
cold = (time.thread_time() - start) / 900
start = time.thread_time()
for attempt in range(300):
    lease_members(task, state, set(range(300)), 60, random.Random(attempt))
warm = (time.thread_time() - start) / 300
print(f"members {digest.hexdigest()[:16]}  {1000 * cold:.2f} ms a draw over 900, {1000 * warm:.3f} ms warm")
