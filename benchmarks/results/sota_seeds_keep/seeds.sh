#!/bin/sh
# The losing rows of mapf_sota_keep.json at seeds 1 and 2: LNS2 and our 3-agent async team (4 blocks) side by side.
cd "$(dirname "$0")/../../.."
for seed in 1 2; do
  for inst in room-32-32-4:100 empty-16-16:100 warehouse-10-20-10-2-1:200; do
    tag=$(echo $inst | tr ':' '-')-s$seed
    .venv/bin/python benchmarks/mapf_sota.py --agents 3 --limit 30 --lns2-src /work/ext/lns2 --teams async --no-stall \
      --seed $seed --only $inst --json benchmarks/results/sota_seeds_keep/$tag.json > /tmp/seeds-$tag.txt 2>&1
    echo "$tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
