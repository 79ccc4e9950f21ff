#!/usr/bin/env bash
# Teams for the samples reading, random-32-32-10 k = 300, seeds 1-3: N agents for T virtual seconds, each run
# ending once its head reaches the seed's pooled Q (the upper median of every one-agent run's plan at 120 s
# in OUT/one-*.json). Run from the lab checkout without LAB_* variables.  Usage: teams.sh LANE OUT N T
set -euo pipefail
lane=$1; out=$2; n=$3; t=$4
q=$(.venv/bin/python - "$out" <<'PY'
import json, statistics, sys
from pathlib import Path
final = {}
for f in sorted(Path(sys.argv[1]).glob("one-*.json")):
    for r in json.loads(f.read_text())["runs"]:
        final.setdefault(r["seed"], []).append(r["final"])
print(" ".join(f"{s}={int(statistics.median_high(v))}" for s, v in sorted(final.items())))
PY
)
echo "teams.sh: N=$n T=$t Q $q"
.venv/bin/python -m benchmarks.team_scaling virtual --map random-32-32-10 --robots 300 --seeds 1 2 3 \
  --agents "$n" --time "$t" --at 5 10 15 20 30 --stop-at $q --out "$out/team-n$n-t$t-s123-$lane.json"
