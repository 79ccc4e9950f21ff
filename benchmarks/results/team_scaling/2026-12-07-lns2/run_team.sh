#!/bin/sh
# 8 virtual agents, 30 s, seeds 1-3, on each instance given as MAP:K (run from a checkout of the tree named in
# COMMANDS.md), each instance once LNS2's three seeds of it are in $L/lns2: each run ends once its head is at
# or below LNS2's sum of costs at its seed (--stop-at). One run at a time (LNS2 runs on the other core).
set -e
L=${L:-benchmarks/results/team_scaling/2026-12-07-lns2}
for inst in "$@"; do
    m=${inst%:*}; k=${inst#*:}
    while [ ! -f "$L/lns2/$m-$k-s3.json" ]; do sleep 10; done
    stops=$(python3 -c "
import json
for s in (1, 2, 3):
    rows = json.load(open('$L/lns2/$m-$k-s%d.json' % s))['rows']
    print('%d=%d' % (s, next(r for r in rows if r['solver'] == 'lns2')['soc']), end=' ')")
    .venv/bin/python -m benchmarks.team_scaling virtual --map "$m" --robots "$k" --agents 8 --seeds 1 2 3 \
        --time 30 --at 10 20 30 --stop-at $stops --jobs 1 --out "$L/virtual-n8-$m-k$k.json"
done
