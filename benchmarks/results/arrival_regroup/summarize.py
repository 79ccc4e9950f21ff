"""SOC at 30 s per instance and seed, for each team of run.sh (a1/a2/a3: agents; -stalled: the old
regrouping), with each column's median and, per pair of columns, on how many seeds the first is at
least as good: ``python benchmarks/results/arrival_regroup/summarize.py``."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent
COLUMNS = {
    "blockopt-1-async": "1 agent",
    "blockopt-2-async": "2 agents",
    "blockopt-3-async": "3 agents",
    "blockopt-3-async-stalled": "3 agents, stalled",
}
PAIRS = [
    ("blockopt-3-async", "blockopt-3-async-stalled"),
    ("blockopt-2-async", "blockopt-1-async"),
    ("blockopt-3-async", "blockopt-1-async"),
]


def main() -> None:
    soc: dict[str, dict[str, dict[int, int]]] = defaultdict(lambda: defaultdict(dict))
    for path in sorted(HERE.glob("a*-s*.json")):
        data = json.loads(path.read_text())
        seed = data["meta"]["seed"]
        for row in data["rows"]:
            if row["solver"] in COLUMNS:
                assert row["valid"], (path, row)
                soc[row["instance"]][row["solver"]][seed] = row["soc"]
    print("| instance | " + " | ".join(COLUMNS.values()) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for inst, cols in soc.items():
        cells = []
        for name in COLUMNS:
            got = cols.get(name, {})
            runs = "/".join(str(got[s]) for s in sorted(got))
            cells.append(f"{runs} (median {statistics.median(got.values()):.0f})" if got else "-")
        print(f"| {inst} | " + " | ".join(cells) + " |")
    print()
    for a, b in PAIRS:
        wins = total = 0
        for cols in soc.values():
            for seed in set(cols.get(a, {})) & set(cols.get(b, {})):
                total += 1
                wins += cols[a][seed] <= cols[b][seed]
        print(f"{COLUMNS[a]} <= {COLUMNS[b]}: {wins} of {total} (instance, seed) pairs")


if __name__ == "__main__":
    main()
