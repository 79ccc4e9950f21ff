#!/bin/bash
# scale-out before (main) / after (shard), alternated
for pair in "main shard" "shard main"; do
  for tree in $pair; do
    dir=/work/main; [ $tree = shard ] && dir=/work/wt-shard
    echo "== $tree $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
    (cd $dir && /work/main/.venv/bin/python benchmarks/service_split.py --parts scaleout --repeats 1 --seconds 8 --json /tmp/so/$tree-$(date +%s).json 2>&1 | grep -E "scaleout|ratio|proposals")
  done
done
echo "== end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
