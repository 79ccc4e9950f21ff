#!/bin/sh
# Quadratic and job-shop through `blockopt run`, before issue 31 (910726a) and on today's tree, one run at a
# time, the trees alternating and their order rotating from seed to seed. Usage: run.sh OLD_TREE NEW_TREE OUT
set -e
old=$1; new=$2; out=$3
mkdir -p "$out"
one() {  # TREE LABEL NAME ARGS...: one run, its report in $out/LABEL-NAME.json
    tree=$1; label=$2; name=$3; shift 3
    (cd "$tree" && PYTHONPATH=.:examples/jobshop .venv/bin/python -m blockopt run "$@" --time-limit 60 \
        --report "$out/$label-$name.json" > "$out/$label-$name.txt" 2>&1) || echo "$label-$name failed"
}
for seed in 0 1 2; do
    if [ $((seed % 2)) -eq 0 ]; then order="old new"; else order="new old"; fi
    for mode in rounds async; do
        for label in $order; do
            eval tree=\$$label
            one "$tree" "$label" "quadratic64-$mode-s$seed" quadratic --blocks 64 --agents 8 --mode $mode --seed $seed
            one "$tree" "$label" "quadratic-$mode-s$seed" quadratic --agents 4 --mode $mode --seed $seed
            one "$tree" "$label" "ft06-$mode-s$seed" jobshop --instance ft06 --agents 3 --mode $mode --seed $seed
        done
    done
done
