#!/bin/sh
# The losing rows of mapf_sota_keep.json at seeds 1 and 2: LNS2 and our 3-agent async team (4 blocks) side
# by side (run 2026-12-03 07:22-07:29 UTC, code of b856999, by the loop now in benchmarks/sota_seeds.sh).
cd "$(dirname "$0")/../../.."
exec benchmarks/sota_seeds.sh benchmarks/results/sota_seeds_keep "1 2" \
  "room-32-32-4:100 empty-16-16:100 warehouse-10-20-10-2-1:200"
