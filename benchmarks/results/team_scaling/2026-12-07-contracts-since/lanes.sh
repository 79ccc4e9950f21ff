#!/usr/bin/env bash
# Two lanes at once, side by side (same tree, same machine): a team whose agents get every contract whole
# (--knob keep_contract=false) against one whose contracts come written since the kept one (the default).
# From the checkout root:
#   [AGENTS=16] [LEVEL=1] [TIME=20] bash benchmarks/results/team_scaling/2026-12-07-contracts-since/lanes.sh
# LEVEL=1: level merges (--param level_merges=true), files level-*; LEVEL=0: the default team, files team-*.
set -euo pipefail
L=benchmarks/results/team_scaling/2026-12-07-contracts-since
N=${AGENTS:-16}
T=${TIME:-20}
if [ "${LEVEL:-1}" = 1 ]; then PARAMS=(--param level_merges=true); TAG=level; else PARAMS=(); TAG=team; fi
run() {  # name, extra options
  .venv/bin/python -m benchmarks.team_scaling virtual --robots 300 --agents "$N" --seeds 1 2 3 --time "$T" \
    --at 2 5 10 15 20 "${PARAMS[@]}" "${@:2}" --out "$L/$1.json" > "$L/$1.txt" 2>&1
}
run "$TAG-whole-n$N-t$T-s123" --knob keep_contract=false &
a=$!
run "$TAG-since-n$N-t$T-s123" &
b=$!
wait $a $b
