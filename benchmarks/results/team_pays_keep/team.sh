#!/bin/sh
# The run of this directory (code of b856999, 2026-12-03 06:30-06:53 UTC): 1, 2 and 3 agents, seeds 1-4.
cd "$(dirname "$0")/../../.."
exec benchmarks/team_pays.sh benchmarks/results/team_pays_keep "1 2 3" "1 2 3 4" \
  "random-32-32-10:200 warehouse-10-20-10-2-1:200 random-32-32-10:300"
