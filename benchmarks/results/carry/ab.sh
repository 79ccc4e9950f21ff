#!/bin/sh
# The product's async team (3 worker processes, 6 blocks, 30 s, no stall stop) without and with carrying a
# turned-down proposal into the next search: TREE_A (before) and TREE_B (after), alternated per instance
# and seed, each tree's own benchmarks/mapf_sota.py (its team imports that tree).
A=${TREE_A:?}; B=${TREE_B:?}; OUT=$(cd "$(dirname "$0")" && pwd)
for seed in 1 2; do
  for inst in random-32-32-10:300 room-32-32-4:100 random-32-32-10:200; do
    for side in A B; do
      tree=$A; [ $side = B ] && tree=$B
      tag=$(echo $inst | tr ':' '-')-s$seed-$side
      (cd $tree && /work/main/.venv/bin/python benchmarks/mapf_sota.py --agents 3 --limit 30 --teams async \
        --no-stall --seed $seed --only $inst --json $OUT/$tag.json > /tmp/carry-$tag.txt 2>&1)
      echo "$tag done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
