#!/bin/sh
# One agent against three, async, 30 s, no stall stop, at seeds 1 and 2 (seed 0: mapf_sota_salted.json);
# code of fdeab7d, 2026-12-03 14:00-14:08 UTC. LNS2 and LaCAM3 left out (no source trees given).
cd "$(dirname "$0")/../../.."
for s in 1 2; do
  .venv/bin/python benchmarks/mapf_sota.py --agents 1 3 --limit 30 --teams async --no-stall --seed $s \
    --only random-32-32-10:200 random-32-32-10:300 warehouse-10-20-10-2-1:200 \
    --json benchmarks/results/team_pays_salted/s$s.json
done
