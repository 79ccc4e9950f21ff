#!/bin/sh
# Everything of COMMANDS.md, one run at a time: run.sh of lose_nothing_2026-12-06 (quadratic and ft06), then
# ta01 and sqlplan, the trees alternating. Usage (from this folder): sh run_all.sh OLD NEW SQL_OLD
set -e
old=$1; new=$2; sqlold=$3; out=$PWD/runs
sh ../lose_nothing_2026-12-06/run.sh "$old" "$new" "$out"
ta01() {  # TREE LABEL SEED
    (cd "$1" && PYTHONPATH=.:examples/jobshop .venv/bin/python -m blockopt run jobshop --instance ta01 --agents 4 \
        --mode async --seed "$3" --time-limit 60 --report "$out/$2-ta01-async-s$3.json" > "$out/$2-ta01-async-s$3.txt" 2>&1)
}
ta01 "$old" old 0; ta01 "$new" new 0; ta01 "$new" new 1; ta01 "$old" old 1
sqlplan() {  # TREE LABEL RUN
    (cd "$1" && PYTHONPATH=. .venv/bin/python -m benchmarks.sqlplan team --budgets none --policies lease_order \
        --seeds 0 --limit 120 --out "$out/$2-sqlplan-lease_order-seed0-run$3.json" > "$out/$2-sqlplan-run$3.txt" 2>&1)
}
sqlplan "$sqlold" old 1; sqlplan "$new" new 1; sqlplan "$new" new 2; sqlplan "$sqlold" old 2
