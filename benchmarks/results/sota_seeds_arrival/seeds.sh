#!/bin/sh
# The losing rows of mapf_sota_arrival.json (3 agents) at seeds 1 and 2, LNS2 beside our 3-agent async
# team (4 blocks, regrouping on arrival); code of 5d534d7+, 2026-12-03.
cd "$(dirname "$0")/../../.."
exec benchmarks/sota_seeds.sh benchmarks/results/sota_seeds_arrival "1 2" \
  "warehouse-10-20-10-2-1:100 warehouse-10-20-10-2-1:200 room-32-32-4:50 empty-16-16:50 empty-16-16:100"
