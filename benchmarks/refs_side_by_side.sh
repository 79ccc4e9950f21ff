#!/bin/sh
# Our async team (benchmarks/mapf_sota.py's blockopt column, no reference solver) on several git refs side
# by side: each ref is exported once with git archive and warmed up (its compiled SIPP cached), then per
# seed and instance the refs run one after the other, their order rotating, so a change of machine load hits
# every ref alike. One raw JSON per run in OUT_DIR, named REF-INSTANCE-sSEED.json.
#
#   benchmarks/refs_side_by_side.sh OUT_DIR "REFS..." "SEEDS..." "MAP:K..." [AGENTS]   (AGENTS: 3 by default)
#   benchmarks/refs_side_by_side.sh benchmarks/results/walk "83e4337 bb3f52a be98d48" "1 2" "empty-16-16:100"
set -e
if [ $# -lt 4 ] || [ $# -gt 5 ]; then
  echo "refs_side_by_side.sh: error: want OUT_DIR \"REFS...\" \"SEEDS...\" \"MAP:K...\" [AGENTS]" >&2
  exit 2
fi
out=$1; refs=$2; seeds=$3; instances=$4; agents=${5:-3}
repo=$(cd "$(dirname "$0")/.." && pwd)
python=$repo/.venv/bin/python
mkdir -p "$out"
trees=$(mktemp -d /tmp/refs-side-by-side.XXXXXX)
trap 'rm -rf "$trees"' EXIT
for ref in $refs; do
  if ! git -C "$repo" rev-parse --verify -q "$ref^{commit}" > /dev/null; then
    echo "refs_side_by_side.sh: error: no commit '$ref' in $repo" >&2
    exit 2
  fi
  mkdir "$trees/$ref"
  git -C "$repo" archive "$ref" | tar -x -C "$trees/$ref"
  (cd "$trees/$ref" && PYTHONPATH=. "$python" benchmarks/mapf_sota.py --limit 2 --agents "$agents" --teams async \
    --only empty-16-16:20 > /dev/null)  # warm-up: SIPP compiles into the tree's cache
  echo "$ref exported and warmed up $(date +%T)"
done
turn=0
for seed in $seeds; do
  for inst in $instances; do
    tag=$(echo "$inst" | tr ':' '-')-s$seed
    order=$(echo $refs | tr ' ' '\n' | awk -v n="$turn" '{a[NR]=$0} END {for (i=0;i<NR;i++) print a[(i+n)%NR+1]}')
    for ref in $order; do
      (cd "$trees/$ref" && PYTHONPATH=. "$python" benchmarks/mapf_sota.py --agents "$agents" --limit 30 --teams async \
        --no-stall --seed "$seed" --only "$inst" --json "$trees/$ref-$tag.json" > "$trees/$ref-$tag.txt" 2>&1)
      cp "$trees/$ref-$tag.json" "$out/$ref-$tag.json"
      soc=$("$python" -c "import json,sys; print(*[r.get('soc') for r in json.load(open(sys.argv[1]))['rows'] if 'skipped' not in r])" "$out/$ref-$tag.json")
      echo "$ref $tag soc $soc $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    done
    turn=$((turn + 1))
  done
done
