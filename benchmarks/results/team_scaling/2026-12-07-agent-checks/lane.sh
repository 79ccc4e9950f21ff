#!/usr/bin/env bash
# One arm of the side-by-side pairs: 16 agents, 10 s, random-32-32-10 k = 300, seeds 1-3, REPEATS rounds, from
# the checkout TREE (its own .venv). Run the two arms at once, one lane each, so both meet the same machine.
# Usage: lane.sh TREE ARM OUT REPEATS [FIRST]   e.g. lane.sh /work/wt/base base $A 3 & lane.sh /work/wt/new new $A 3
# (FIRST: the first round's number, 1 by default; later rounds add to the earlier ones' files)
set -euo pipefail
tree=$1; arm=$2; out=$(realpath "$3"); repeats=$4; first=${5:-1}
V="-m benchmarks.team_scaling virtual --map random-32-32-10 --robots 300 --agents 16 --time 10 --at 2 4 6 8 10"
for r in $(seq "$first" $((first + repeats - 1))); do
  for s in 1 2 3; do
    (cd "$tree" && .venv/bin/python $V --seeds $s --out "$out/pairs-$arm-n16-t10-s$s-r$r.json")
    echo "$(date +%T) $arm seed $s round $r done" >> "$out/lane-$arm.log"
  done
done
