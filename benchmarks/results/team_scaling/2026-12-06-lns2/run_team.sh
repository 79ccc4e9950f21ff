#!/bin/sh
# 8 virtual agents, 30 s, seeds 1-3, on each instance of $L/lns2 (run from a checkout of the tree named in
# COMMANDS.md): each run ends once its head is at or below LNS2's sum of costs at its seed (--stop-at).
# JOBS: runs at once (2, as this folder's runs went).
set -e
L=${L:-benchmarks/results/team_scaling/2026-12-06-lns2}
for inst in "$@"; do
    m=${inst%:*}; k=${inst#*:}
    stops=$(python3 -c "
import json, sys
for s in (1, 2, 3):
    rows = json.load(open('$L/lns2/$m-$k-s%d.json' % s))['rows']
    print('%d=%d' % (s, next(r for r in rows if r['solver'] == 'lns2')['soc']), end=' ')")
    .venv/bin/python -m benchmarks.team_scaling virtual --map "$m" --robots "$k" --agents 8 --seeds 1 2 3 \
        --time 30 --at 10 20 30 --stop-at $stops --jobs "${JOBS:-2}" --out "$L/virtual-n8-$m-k$k.json"
done
