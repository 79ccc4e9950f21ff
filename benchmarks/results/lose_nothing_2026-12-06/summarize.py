"""The side-by-side reports of run.sh, per configuration: status, seconds, final objective and answers;
then the sqlplan runs (``benchmarks.sqlplan team``'s raw files): time to 3,800, final cost, status.

python3 summarize.py OUT > table.txt
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any


def main(folder: Path) -> None:
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in sorted(folder.glob("*.json")):
        m = re.fullmatch(r"(old|new)-(.+)-s(\d+)\.json", f.name)
        if m is None:
            continue
        r = json.loads(f.read_text())
        final = r["objective"]["final"]
        answers = r["proposals"]["received"]
        row = {
            "seed": int(m[3]),
            "status": r["status"],
            "wall_s": r["wall_s"],
            "final": final,
            "answers": answers,
        }
        runs.setdefault((m[2], m[1]), []).append(row)
    print("| run | tree | seeds | status | seconds (median, range) | final | answers |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted({n for n, _ in runs}):
        for tree in ("old", "new"):
            rows = sorted(runs.get((name, tree), []), key=lambda r: r["seed"])
            if not rows:
                continue
            walls = [r["wall_s"] for r in rows]
            statuses = ", ".join(sorted({r["status"] for r in rows}))
            finals = " / ".join(f"{r['final']:.6g}" for r in rows)
            answers = " / ".join(str(r["answers"]) for r in rows)
            print(
                f"| {name} | {tree} | {len(rows)} | {statuses} | {statistics.median(walls):.2f}"
                f" ({min(walls):.2f}-{max(walls):.2f}) | {finals} | {answers} |"
            )
    sqlplan(folder)


def sqlplan(folder: Path) -> None:
    print("\nsqlplan team, lease order, SF 0.01, 120 s, seed 0 (old: 0325ba4, as 910726a has no")
    print("`-m benchmarks.sqlplan`; old run 1 failed while the TPC-H database was generated):\n")
    print("| run | time to 3,800 (s) | final | status | all equivalent |")
    print("|---|---:|---:|---|---|")
    for f in sorted(folder.glob("*sqlplan*.json")):
        r = json.loads(f.read_text())["rows"][0]
        t = next(a for a, b in r["trajectory"] if b <= 3800)
        print(f"| {f.stem} | {t:.2f} | {r['objective']:,.0f} | {r['status']} | {r['all_equivalent']} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
