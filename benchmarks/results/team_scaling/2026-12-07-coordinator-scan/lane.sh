# lane.sh TREE LABEL OUT: 8 and 16 agents, 20 s, seeds 1-3, random-32-32-10 k = 300, from a checkout of TREE
cd "$1" && .venv/bin/python -m benchmarks.team_scaling virtual --robots 300 --agents 8 16 --seeds 1 2 3 --time 20 \
    --at 2 5 10 15 20 --out "$3/$2-n816-t20-s123.json" > "$3/$2-n816-t20-s123.txt" 2>&1
