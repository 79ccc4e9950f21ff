#!/bin/sh
# One agent in async mode: 1 block (all robots) against the default 2, alternated per instance and seed.
cd "$(dirname "$0")/../../.."
for seed in 1 2 3; do
  for inst in random-32-32-10:300 room-32-32-4:100 warehouse-10-20-10-2-1:200; do
    for b in 1 2; do
      tag=$(echo $inst | tr ':' '-')-b$b-s$seed
      .venv/bin/python benchmarks/mapf_sota.py --agents 1 --blocks $b --limit 30 --teams async --no-stall --seed $seed \
        --only $inst --json benchmarks/results/one_agent_blocks/$tag.json > /tmp/oab-$tag.txt 2>&1
      echo "$tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
