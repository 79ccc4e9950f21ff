#!/bin/sh
# 8 virtual agents, 30 s, seeds 1-3, on each instance given as MAP:K (run from a checkout of the tree named in
# COMMANDS.md): each instance once LNS2's three seeds of it are in $L/lns2, by ../2026-12-06-lns2/run_team.sh,
# one run at a time (LNS2 runs on the other core).
set -e
L=${L:-benchmarks/results/team_scaling/2026-12-07-lns2}
HERE=$(dirname "$0")
for inst in "$@"; do
    m=${inst%:*}; k=${inst#*:}
    while [ ! -f "$L/lns2/$m-$k-s3.json" ]; do sleep 10; done
    L=$L JOBS=1 sh "$HERE/../2026-12-06-lns2/run_team.sh" "$inst"
done
