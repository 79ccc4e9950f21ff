#!/bin/sh
# put_back off (BEFORE, a tree at fd7a74e) and on (AFTER, a tree at fa0bdba), 3 agents async, 30 s, no stall
# stop, the two trees alternating per instance and seed; one raw JSON per run in this directory.
#   BEFORE=/work/wt AFTER=/work/wt2 benchmarks/results/put_back/run.sh
out=$(cd "$(dirname "$0")" && pwd)
for seed in 0 1; do
  for inst in random-32-32-10:300 warehouse-10-20-10-2-1:200 room-32-32-4:50 empty-16-16:100; do
    for side in before after; do
      if [ $side = before ]; then tree=$BEFORE; else tree=$AFTER; fi
      tag=$side-$(echo "$inst" | tr ':' '-')-s$seed
      "$tree/.venv/bin/python" "$tree/benchmarks/mapf_sota.py" --agents 3 --limit 30 --teams async --no-stall \
        --seed $seed --only "$inst" --json "$out/$tag.json" > "/tmp/put_back-$tag.txt" 2>&1
      echo "$tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
