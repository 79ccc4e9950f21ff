#!/usr/bin/env bash
# The opening, the tree against the focus patch (each agent's neighbourhoods grown from its own region of the
# robots for its first LAB_FOCUS_CPU seconds of search CPU): 16 agents, 6 s, random-32-32-10 k = 300, one run
# per seed and arm in turn, REPEATS rounds. BASE and FOCUS are checkouts (FOCUS with $OUT/focus.patch applied).
# Usage: opening-pairs.sh BASE FOCUS OUT REPEATS
set -euo pipefail
base=$1; focus=$2; out=$3; repeats=$4
V="-m benchmarks.team_scaling virtual --map random-32-32-10 --robots 300 --agents 16 --time 6 --at 2 3 4 5 6"
for r in $(seq 1 "$repeats"); do
  for s in 1 2 3; do
    (cd "$base" && .venv/bin/python $V --seeds $s --out "$out/opening-base-n16-t6-s$s-r$r.json")
    (cd "$focus" && LAB_FOCUS=16 LAB_FOCUS_CPU=2 .venv/bin/python $V --seeds $s --out "$out/opening-focus-n16-t6-s$s-r$r.json")
  done
done
