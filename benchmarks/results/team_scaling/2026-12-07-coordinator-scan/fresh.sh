# fresh.sh TREE LABEL [CACHE]: blockopt run routing with numba's cache in /tmp/fresh/cache-LABEL, emptied first
# (a fresh install), or in cache-CACHE as it is; 2 agents, 10 s, random-32-32-10 k = 150, seed 1
T=$1; L=$2; C=${3:-$L}; [ -z "$3" ] && rm -rf /tmp/fresh/cache-$L; mkdir -p /tmp/fresh/cache-$C
cd $T && /usr/bin/time -f "%e s wall, %U s user" env NUMBA_CACHE_DIR=/tmp/fresh/cache-$C PYTHONPATH=. .venv/bin/blockopt run routing --map random-32-32-10 --robots 150 --seed 1 --mode async --agents 2 --processes 2 --time-limit 10 --stall-seconds 10 --quiet --report /tmp/fresh/$L.json > /tmp/fresh/$L.out 2>&1
tail -1 /tmp/fresh/$L.out
