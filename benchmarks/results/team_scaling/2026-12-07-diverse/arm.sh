#!/usr/bin/env bash
# One arm of the diverse-team comparison: 16 agents, 20 s virtual, seeds 1-3, random-32-32-10 k = 300.
# Run from a checkout of 82e31af (bfee511's product code) with diverse.patch applied; the arm is chosen by
# LAB_SIZES / LAB_GENS in the environment (neither: the tree as it ships).  Usage: arm.sh NAME OUT
set -euo pipefail
name=$1; out=$2
.venv/bin/python -m benchmarks.team_scaling virtual --map random-32-32-10 --robots 300 --seeds 1 2 3 \
  --agents "${AGENTS:-16}" --time "${SECONDS_RUN:-20}" --at 5 10 15 20 --out "$out/$name.json"
