#!/usr/bin/env bash
# One lane of the samples reading on room or the warehouse, seeds 1-3, virtual cores: three one-agent runs of
# 180 s per seed (so that the time each takes to reach the 120 s plan is known even past 120 s), then RUNS
# teams of each size in TEAMS that stop once their head reaches the seed's Q, the upper median of the one-agent
# runs' plans at 120 s (team_scaling table's Q with --pool --target-time 120). Run from a checkout of the tree
# measured.  Usage: [TEAMS="16"] [RUNS=3] lane.sh room|warehouse OUT
set -euo pipefail
name=$1; out=$2
case $name in
  room) inst="--map room-32-32-4 --robots 100" ;;
  warehouse) inst="--map warehouse-10-20-10-2-1 --robots 200" ;;
  *) echo "lane.sh: room or warehouse, not '$name'" >&2; exit 2 ;;
esac
V=".venv/bin/python -m benchmarks.team_scaling virtual $inst --seeds 1 2 3"
for r in 1 2 3; do
  f="$out/$name-n1-t180-s123-r$r.json"
  [ -e "$f" ] || $V --agents 1 --time 180 --at 10 20 30 60 120 180 --out "$f"
done
q=$(PYTHONPATH=. .venv/bin/python - "$out" "$name" <<'PY'
import json, statistics, sys
from pathlib import Path
from benchmarks.team_scaling import value_at
at = {}
for f in sorted(Path(sys.argv[1]).glob(f"{sys.argv[2]}-n1-t180-*.json")):
    for r in json.loads(f.read_text())["runs"]:
        at.setdefault(r["seed"], []).append(value_at(r["curve"], 120))
print(" ".join(f"{s}={int(statistics.median_high(v))}" for s, v in sorted(at.items())))
PY
)
echo "$name: Q $q"
for n in ${TEAMS:-16}; do
  for r in $(seq 1 "${RUNS:-3}"); do
    f="$out/$name-n$n-t30-s123-r$r.json"
    [ -e "$f" ] || $V --agents "$n" --time 30 --at 5 10 20 30 --stop-at $q --out "$f"
  done
done
