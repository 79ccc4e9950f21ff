#!/bin/sh
# Does the team pay? The product's async team (blockopt run --mode async, a worker process per agent, the
# kind's default blocks) for each team size, alternated per instance and seed; no stall stop (every run
# goes to the limit). One raw JSON per run in OUT_DIR, named INSTANCE-aAGENTS-sSEED.json.
#
#   benchmarks/team_pays.sh OUT_DIR "AGENTS..." "SEEDS..." "MAP:K..."
#   benchmarks/team_pays.sh benchmarks/results/team_pays_keep "1 2 3" "1 2 3 4" \
#       "random-32-32-10:200 warehouse-10-20-10-2-1:200 random-32-32-10:300"
set -e
if [ $# -ne 4 ]; then
  echo "team_pays.sh: error: want OUT_DIR \"AGENTS...\" \"SEEDS...\" \"MAP:K...\"" >&2
  exit 2
fi
out=$1; teams=$2; seeds=$3; instances=$4
cd "$(dirname "$0")/.."
mkdir -p "$out"
for seed in $seeds; do
  for inst in $instances; do
    for a in $teams; do
      tag=$(echo "$inst" | tr ':' '-')-a$a-s$seed
      .venv/bin/python benchmarks/mapf_sota.py --agents "$a" --limit 30 --teams async --no-stall --seed "$seed" \
        --only "$inst" --json "$out/$tag.json" > "/tmp/team-$tag.txt" 2>&1
      echo "$tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
