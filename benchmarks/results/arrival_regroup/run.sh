#!/bin/sh
# Regrouping on arrival, side by side (code of the commit that adds regroup_after; 2026-12-03): per seed and
# instance, 3 agents in async mode with the new default (regroup_after arrival) and with the old behaviour
# (async-stalled: regroup only after an empty round), then 1 and 2 agents with the new default. 30 s each,
# no stall stop. One JSON per seed and call in this directory.
set -e
cd "$(dirname "$0")/../../.."
out=benchmarks/results/arrival_regroup
for seed in 1 2 3; do
  .venv/bin/python benchmarks/mapf_sota.py --agents 3 --teams async async-stalled --no-stall --seed "$seed" \
    --only random-32-32-10:200 random-32-32-10:300 warehouse-10-20-10-2-1:200 room-32-32-4:100 \
    --json "$out/a3-s$seed.json" > "/tmp/arrival-a3-s$seed.txt" 2>&1
  echo "a3 s$seed done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  .venv/bin/python benchmarks/mapf_sota.py --agents 1 2 --teams async --no-stall --seed "$seed" \
    --only random-32-32-10:200 random-32-32-10:300 warehouse-10-20-10-2-1:200 room-32-32-4:100 \
    --json "$out/a12-s$seed.json" > "/tmp/arrival-a12-s$seed.txt" 2>&1
  echo "a12 s$seed done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
done
