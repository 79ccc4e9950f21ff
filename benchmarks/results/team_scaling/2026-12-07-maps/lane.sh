#!/usr/bin/env bash
# One lane of a team-scaling table: one agent for 120 s per seed, then teams (16 8 4 2 unless TEAMS says
# which) that stop once their head reaches the seed's Q (one agent's objective at 120 s). Run from a checkout
# of the tree measured; OUT is where the raw files go.  Usage: [TEAMS="16 8"] lane.sh room|warehouse|random OUT
set -euo pipefail
name=$1; out=$2
case $name in
  room) inst="--map room-32-32-4 --robots 100" ;;
  warehouse) inst="--map warehouse-10-20-10-2-1 --robots 200" ;;
  random) inst="--map random-32-32-10 --robots 300" ;;
  *) echo "lane.sh: room, warehouse or random, not '$name'" >&2; exit 2 ;;
esac
V=".venv/bin/python -m benchmarks.team_scaling virtual $inst --seeds 1 2 3"
$V --agents 1 --time 120 --at 10 20 30 60 120 --out "$out/$name-n1-t120-s123.json"
q=$(.venv/bin/python -c "import json,sys; print(' '.join(f\"{r['seed']}={int(r['final'])}\" for r in json.load(open(sys.argv[1]))['runs']))" "$out/$name-n1-t120-s123.json")
echo "$name: Q $q"
for n in ${TEAMS:-16 8 4 2}; do
  case $n in 16|8) t=30 ;; 4) t=40 ;; 2) t=90 ;; *) t=30 ;; esac
  $V --agents "$n" --time $t --at 10 20 30 --stop-at $q --out "$out/$name-n$n-t$t-s123.json"
done
