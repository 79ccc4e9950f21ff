#!/usr/bin/env bash
# One lane of repeats on random-32-32-10 k = 300, seeds 1-3, from the lab checkout without LAB_* variables
# (the tree as it ships): one agent 120 s, then 16 agents 20 s, then one agent 120 s again.
# Usage: repeats.sh LANE OUT   (the runs' files are named after LANE, so two lanes can run at once)
set -euo pipefail
lane=$1; out=$2
V=".venv/bin/python -m benchmarks.team_scaling virtual --map random-32-32-10 --robots 300 --seeds 1 2 3"
$V --agents 1 --time 120 --at 5 10 15 20 60 120 --out "$out/one-n1-t120-s123-$lane-a.json"
$V --agents 16 --time 20 --at 5 10 15 20 --out "$out/base-n16-t20-s123-$lane.json"
$V --agents 1 --time 120 --at 5 10 15 20 60 120 --out "$out/one-n1-t120-s123-$lane-b.json"
