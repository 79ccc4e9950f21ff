#!/usr/bin/env bash
# One agent for 180 s per seed (random-32-32-10 k = 300, seeds 1-3), so that the time it takes to reach its
# own 120 s plan is known even when that is after 120 s: no pairing of the samples reading stays open on
# the one-agent side. Run from a checkout with bfee511's routing.  Usage: long-one.sh LANE OUT
set -euo pipefail
lane=$1; out=$2
.venv/bin/python -m benchmarks.team_scaling virtual --map random-32-32-10 --robots 300 --seeds 1 2 3 \
  --agents 1 --time 180 --at 10 20 60 120 180 --out "$out/long-n1-t180-s123-$lane.json"
