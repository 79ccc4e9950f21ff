#!/bin/sh
# 1 agent against 3 agents, the product's team (blockopt run --mode async, a worker process per agent,
# blocks = 2 x agents), per instance alternated, twice; no stall stop (both run to the limit).
cd "$(dirname "$0")/../../.."
for rep in 1 2; do
  for inst in random-32-32-10:200 warehouse-10-20-10-2-1:200 random-32-32-10:300; do
    for a in 1 3; do
      tag=$(echo $inst | tr ':' '-')-a$a-r$rep
      .venv/bin/python benchmarks/mapf_sota.py --agents $a --limit 30 --teams async --no-stall --seed $rep \
        --only $inst --json benchmarks/results/team_pays_jit/$tag.json > /tmp/team-$tag.txt 2>&1
      echo "$tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
