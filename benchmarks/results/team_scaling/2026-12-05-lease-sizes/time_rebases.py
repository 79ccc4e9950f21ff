"""Time drop_colliding / settle of a checkout on captured answers: time_rebases.py CHECKOUT PICKLE."""

import pickle
import sys
import time

sys.path.insert(0, sys.argv[1])
from tasks.routing import rebase as rb
from tasks.routing.occupancy import OccupancyIndex

cap = pickle.load(open(sys.argv[2], "rb"))
fn = getattr(rb, "settle", None)
items = []
for paths, robots, value in cap:
    idx = OccupancyIndex.build(1024, dict(enumerate(paths)))
    written = {r: p for r, p in zip(robots, value, strict=True) if p is not None}
    items.append((idx, paths, written))
best = []
for _ in range(5):
    t0 = time.process_time()
    out = []
    for idx, paths, written in items:
        if fn is not None:
            kept, collided = fn(idx, paths, written)
        else:
            collided = rb.collides(idx, written)
            kept = rb.drop_colliding(idx, paths, written) if collided else None
        out.append((collided, kept if collided else None))
    best.append(time.process_time() - t0)
print(
    sys.argv[1],
    "calls",
    len(items),
    "best ms/call %.2f" % (1000 * min(best) / len(items)),
    "collided",
    sum(1 for c, _ in out if c),
    "kept robots",
    sum(len(k) for c, k in out if c),
)
