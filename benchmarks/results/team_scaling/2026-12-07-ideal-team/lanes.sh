# Two lanes at once from a checkout (CHECKOUT, default /work/main), in this folder: the model's team (16 agents,
# 0.05 s rounds, 16 s of team time) by both rules on seeds 1-3, and one search alone for 120 s per seed.
C=${CHECKOUT:-/work/main}
run() { PYTHONPATH=$C $C/.venv/bin/python ideal_team.py "$@" > "log-$1-n$2-$5.txt" 2>&1; }
(for s in 1 2 3; do run $s 16 0.05 16 gain-fit; done) &
(for s in 1 2 3; do run $s 1 0.05 120 walk; done; for s in 1 2 3; do run $s 16 0.05 16 sideways-fit; done) &
wait
