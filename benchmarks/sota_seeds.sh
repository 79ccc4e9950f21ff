#!/bin/sh
# LNS2 and our async team side by side at other seeds, one instance and seed per mapf_sota.py call (one
# raw JSON each in OUT_DIR, named INSTANCE-sSEED.json; LaCAM3 left out). LNS2_SRC: the MAPF-LNS2 tree
# (default /work/ext/lns2).
#
#   benchmarks/sota_seeds.sh OUT_DIR "SEEDS..." "MAP:K..." [AGENTS]      (AGENTS: 3 by default)
#   benchmarks/sota_seeds.sh benchmarks/results/sota_seeds_arrival "1 2" "empty-16-16:50 room-32-32-4:50"
set -e
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "sota_seeds.sh: error: want OUT_DIR \"SEEDS...\" \"MAP:K...\" [AGENTS]" >&2
  exit 2
fi
out=$1; seeds=$2; instances=$3; agents=${4:-3}
cd "$(dirname "$0")/.."
mkdir -p "$out"
for seed in $seeds; do
  for inst in $instances; do
    tag=$(echo "$inst" | tr ':' '-')-s$seed
    .venv/bin/python benchmarks/mapf_sota.py --agents $agents --limit 30 --lns2-src "${LNS2_SRC:-/work/ext/lns2}" --teams async \
      --no-stall --seed "$seed" --only "$inst" --json "$out/$tag.json" > "/tmp/seeds-$tag.txt" 2>&1
    echo "$tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
