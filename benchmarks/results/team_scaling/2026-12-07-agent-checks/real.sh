#!/usr/bin/env bash
# Real processes on this machine: 2 agents against one agent's 60 s plan within 35 s, seeds 1-3, one instance at a
# time, nothing else running. From a checkout's root: bash $A/real.sh $A
set -euo pipefail
out=$(realpath "$1")
for inst in "room-32-32-4 100 room-k100" "random-32-32-10 300 random-k300" "warehouse-10-20-10-2-1 200 warehouse-k200"; do
  set -- $inst
  .venv/bin/python -m benchmarks.team_scaling real --map $1 --robots $2 --agents 1 2 --seeds 1 2 3 --time 60 \
      --time-of 2=35 --target-time 60 --out "$out/real-$3-n12-s123.json" > "$out/real-$3-n12-s123.txt" 2>&1
done
