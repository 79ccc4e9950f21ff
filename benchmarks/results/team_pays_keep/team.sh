#!/bin/sh
# 1, 2 and 3 agents, the product's async team (blockopt run --mode async, a worker process per agent,
# blocks = agents + 1, the default), alternated per instance and seed; no stall stop (all run to the limit).
cd "$(dirname "$0")/../../.."
for seed in 1 2 3 4; do
  for inst in random-32-32-10:200 warehouse-10-20-10-2-1:200 random-32-32-10:300; do
    for a in 1 2 3; do
      tag=$(echo $inst | tr ':' '-')-a$a-s$seed
      .venv/bin/python benchmarks/mapf_sota.py --agents $a --limit 30 --teams async --no-stall --seed $seed \
        --only $inst --json benchmarks/results/team_pays_keep/$tag.json > /tmp/team-$tag.txt 2>&1
      echo "$tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
