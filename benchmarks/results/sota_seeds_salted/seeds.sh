#!/bin/sh
# The four losing rows of mapf_sota_salted.json (3 agents) at seeds 1 and 2, LNS2 beside our 3-agent async
# team (4 blocks, regrouping on arrival, salted SIPP ties); code of fdeab7d, 2026-12-03.
cd "$(dirname "$0")/../../.."
exec benchmarks/sota_seeds.sh benchmarks/results/sota_seeds_salted "1 2" \
  "room-32-32-4:50 empty-16-16:100 maze-32-32-2:20 warehouse-10-20-10-2-1:200"
