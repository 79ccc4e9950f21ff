"""The pairs side by side: per seed and round, each arm's head at every mark, its stale share and the
coordinator's busy share; then per mark each arm's median head, how many pairs the second arm led, and a
two-sided sign test over the pairs (ties left out). Read twice: at marks from the run's start (virtual time,
creation and worker start-up included), and at marks from when the agents joined (creation and start-up CPU
vary by 0.2-0.6 s from run to run, the same code either way, and the opening's head moves ~300 a half second).

    PYTHONPATH=. .venv/bin/python $A/pairs.py $A base new    # reads $A/pairs-{base,new}-n16-t10-s*-r*.json
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.team_scaling import value_at

MARKS = (2.0, 4.0, 6.0, 8.0, 10.0)
FROM_JOIN = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0)


def sign_test(wins: int, losses: int) -> float:
    """Two-sided p of a sign test: at least this lopsided a split of ``wins + losses`` fair coin flips."""
    n, low = wins + losses, min(wins, losses)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(low + 1)) / 2**n)


Heads = dict[tuple[str, int, str], list[float]]


def compare(heads: Heads, arms: list[str], marks: tuple[float, ...]) -> None:
    first, second = arms
    for i, t in enumerate(marks):
        pairs = [(v[i], heads[(second, s, r)][i]) for (a, s, r), v in heads.items() if a == first
                 if (second, s, r) in heads]  # fmt: skip
        if not pairs:
            continue
        wins, losses = sum(b < a for a, b in pairs), sum(b > a for a, b in pairs)
        print(
            f"  at {t:g} s: median {first} {statistics.median(a for a, _ in pairs):.0f},"
            f" {second} {statistics.median(b for _, b in pairs):.0f}; {second} lower in {wins} of"
            f" {len(pairs)} pairs (higher in {losses}; sign test p {sign_test(wins, losses):.3f})"
        )


def main() -> None:
    folder, arms = Path(sys.argv[1]), sys.argv[2:4]
    runs: dict[tuple[str, int, str], dict[str, Any]] = {}
    for arm in arms:
        for f in sorted(folder.glob(f"pairs-{arm}-n16-t10-s*-r*.json")):
            (run,) = json.loads(f.read_text())["runs"]
            runs[(arm, int(run["seed"]), f.stem.rsplit("-", 1)[1])] = run
    from_start: Heads = {key: [value_at(run["curve"], t) for t in MARKS] for key, run in runs.items()}
    joined = {key: run["create_cpu"] + run["agent_start"] for key, run in runs.items()}
    from_join = {key: [value_at(runs[key]["curve"], at + t) for t in FROM_JOIN] for key, at in joined.items()}
    for key, run in runs.items():
        stale = sum(v for k, v in run["rejected_by_reason"].items() if k.startswith("stale"))
        print(
            f"{key[0]:5s} seed {key[1]} {key[2]}: " + " / ".join(f"{v:.0f}" for v in from_start[key])
            + f"  joined at {joined[key]:.2f} s; stale {stale} of {run['proposals']},"
            f" coordinator busy {run['busy_fraction']:.0%}, agent CPU {sum(run['agent_cpu']):.1f} s"
        )  # fmt: skip
    print(f"from the run's start (marks {', '.join(f'{t:g}' for t in MARKS)} s):")
    compare(from_start, arms, MARKS)
    print("from the agents' join:")
    compare(from_join, arms, FROM_JOIN)


if __name__ == "__main__":
    main()
