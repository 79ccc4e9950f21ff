"""The model's team against the model's one search, per seed: where one search was when the team had its
head (the pace), and S = T1(Q) / TN(Q) with Q the one search's plan at its last second, and with Q and T1
the product's one agent's (fb1b7db, one 120 s run a seed: main-fb1b7db-n1-t120-s123.txt).

Run in this folder: python read.py [MODE...] (default gain-fit sideways-fit)"""

import json
import sys
from pathlib import Path

PRODUCT_Q = {1: 7045, 2: 7048, 3: 7100}
PRODUCT_T1 = {1: 110.9, 2: 110.3, 3: 116.0}
MARKS = (1, 2, 4, 6, 8, 10, 12, 14, 16)


def first_at(curve, q):
    return next((t for t, v in curve if v <= q), None)


def head_at(curve, t):
    return next((v for x, v in reversed(curve) if x <= t + 1e-9), None)


modes = sys.argv[1:] or ["gain-fit", "sideways-fit"]
for seed in (1, 2, 3):
    one_file = Path(f"ideal-{seed}-n1-0.05-walk-r0.json")
    if not one_file.exists():
        continue
    one = json.loads(one_file.read_text())["curve"]
    q_one, t_end = one[-1][1], one[-1][0]
    print(f"seed {seed}: one search {one[0][1]} -> {q_one} at {t_end:.0f} s "
          f"(reached at {first_at(one, q_one):.1f} s); the product's Q {PRODUCT_Q[seed]}: "
          f"one search at {first_at(one, PRODUCT_Q[seed])}")
    for mode in modes:
        for team_file in sorted(Path().glob(f"ideal-{seed}-n*-0.05-{mode}-r*.json")):
            team = json.loads(team_file.read_text())
            curve, n = team["curve"], team["agents"]
            pace = []
            for m in MARKS:
                h = head_at(curve, m)
                t1 = first_at(one, h) if h is not None else None
                pace.append(f"{m}s {h} (one at {t1 if t1 is not None else '>' + str(int(t_end))}"
                            f"{'' if t1 is None else f', x{t1 / m:.1f}'})")
            tn = first_at(curve, q_one)
            tq = first_at(curve, PRODUCT_Q[seed])
            s = f"{first_at(one, q_one) / tn:.2f}" if tn else f"<{first_at(one, q_one) / curve[-1][0]:.2f}"
            print(f"  {n} agents {mode}: merged {team['merged']} of {team['offered']}; "
                  f"T{n}(Q one) {tn} s, S {s}; T{n}(product Q) {tq} s, S against the product's one agent "
                  f"{f'{PRODUCT_T1[seed] / tq:.2f}' if tq else f'<{PRODUCT_T1[seed] / curve[-1][0]:.2f}'}")
            print("    " + "; ".join(pace))
