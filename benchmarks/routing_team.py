"""Team effects on routing, measured on our system (in-process engine, heuristic agents).

(a) 3 agents vs 1 agent controlling all robots, the same proposer budget per
    round (3 x B vs 1 x 3B), over seeds: how often each reaches a collision-free plan.
(b) 6 agents vs 1 on a larger instance: median wall time and rounds to the
    first collision-free plan. In-process agents run one after the other, so
    the measured wall time is total compute; "parallel s" adds per round only
    the slowest proposer plus the engine, i.e. the wall time of a team whose
    agents run side by side.
(c) checked vs independent merging: time and rounds to collision-free.

    .venv/bin/python benchmarks/routing_team.py                  # all three
    .venv/bin/python benchmarks/routing_team.py --only a --seeds 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import TeamRun, make_task, run_team  # noqa: E402

PARTITION = "spatial"
"""The initial partition (the product default; ``--partition`` changes it). Regrouping is on, as in the product."""


def _median(xs: list[float | None]) -> str:
    got = [x for x in xs if x is not None]
    return f"{statistics.median(got):.1f}" if got else "-"


def _to_free(runs: list[TeamRun]) -> tuple[str, str, str, int]:
    return (
        _median([r.first_feasible_s for r in runs]),
        _median([r.parallel_s for r in runs]),
        _median([float(r.first_feasible_round) if r.first_feasible_round else None for r in runs]),
        sum(1 for r in runs if r.first_feasible_round is not None),
    )


def effect_a(seeds: int, limit: float, budget: float, case: tuple[str, int]) -> None:
    map_name, k = case
    print(
        f"\n(a) {map_name} k={k}, limit {limit:g}s, proposer budget per round {3 * budget:g}s, {seeds} seeds"
    )
    print("| team | collision-free runs | median SOC / LB (collision-free runs) | median rounds |")
    print("|---|---:|---:|---:|")
    arms = ((3, budget), (1, 3 * budget))
    by_arm: dict[int, list[TeamRun]] = {a: [] for a, _ in arms}
    for seed in range(seeds):  # arms interleaved per seed: load changes on a shared machine hit both alike
        for agents, per in arms:
            task = make_task(map_name, "random-1", k, agents, exact_limit=0, seed=seed, partition=PARTITION)
            run = run_team(task, agents, time_limit=limit, time_budget=per, seed=seed)
            by_arm[agents].append(run)
            print(
                f"  seed {seed}: {agents} agents feasible={run.feasible} soc={run.soc} "
                f"rounds={run.rounds} first_free_s={run.first_feasible_s}",
                file=sys.stderr,
                flush=True,
            )
    for agents, per in arms:
        runs = by_arm[agents]
        free = [r for r in runs if r.feasible]
        ratio = f"{statistics.median(r.soc / r.lower_bound for r in free):.3f}" if free else "-"
        print(
            f"| {agents} agent{'s' if agents > 1 else ''} x {per:g}s | {len(free)}/{seeds} | {ratio} | "
            f"{_median([float(r.rounds) for r in runs])} |",
            flush=True,
        )


def effect_b(seeds: int, limit: float, budget: float, case: tuple[str, int]) -> None:
    map_name, k = case
    print(
        f"\n(b) {map_name} k={k}, {budget:g}s per proposal, limit {limit:g}s, {seeds} seeds, stop at collision-free"
    )
    print("| team | reached | median s (sequential) | median s (agents side by side) | median rounds |")
    print("|---|---:|---:|---:|---:|")
    by_arm: dict[int, list[TeamRun]] = {6: [], 1: []}
    for seed in range(seeds):
        for agents in (6, 1):
            task = make_task(map_name, "random-1", k, agents, exact_limit=0, seed=seed, partition=PARTITION)
            run = run_team(
                task, agents, time_limit=limit, time_budget=budget, seed=seed, stop_when_feasible=True
            )
            by_arm[agents].append(run)
            print(
                f"  seed {seed}: {agents} agents first_free_s={run.first_feasible_s} "
                f"round={run.first_feasible_round}",
                file=sys.stderr,
                flush=True,
            )
    for agents in (6, 1):
        runs = by_arm[agents]
        s, par, rounds, reached = _to_free(runs)
        print(
            f"| {agents} agent{'s' if agents > 1 else ''} | {reached}/{seeds} | {s} | {par} | {rounds} |",
            flush=True,
        )


def effect_c(seeds: int, limit: float, budget: float, case: tuple[str, int], agents: int) -> None:
    map_name, k = case
    print(
        f"\n(c) {map_name} k={k}, {agents} agents x {budget:g}s, limit {limit:g}s, {seeds} seeds, stop at collision-free"
    )
    print("| merging | reached | median s (sequential) | median s (agents side by side) | median rounds |")
    print("|---|---:|---:|---:|---:|")
    by_arm: dict[str, list[TeamRun]] = {"checked": [], "independent": []}
    for seed in range(seeds):
        for merge in by_arm:
            task = make_task(map_name, "random-1", k, agents, exact_limit=0, seed=seed, partition=PARTITION)
            run = run_team(
                task,
                agents,
                merge=merge,
                time_limit=limit,
                time_budget=budget,
                seed=seed,
                stop_when_feasible=True,
            )
            by_arm[merge].append(run)
            print(
                f"  seed {seed}: {merge} first_free_s={run.first_feasible_s} "
                f"round={run.first_feasible_round}",
                file=sys.stderr,
                flush=True,
            )
    for merge, runs in by_arm.items():
        s, par, rounds, reached = _to_free(runs)
        print(f"| {merge} | {reached}/{seeds} | {s} | {par} | {rounds} |", flush=True)


def main() -> None:
    global PARTITION
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["a", "b", "c"], default=None)
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--partition", default=None, help=f"initial block partition (default {PARTITION})")
    args = ap.parse_args()
    PARTITION = args.partition or PARTITION
    if args.only in (None, "a"):
        effect_a(args.seeds or 10, 15.0, 0.2, ("random-32-32-20", 100))
    if args.only in (None, "b"):
        effect_b(args.seeds or 3, 45.0, 0.3, ("random-32-32-10", 150))
    if args.only in (None, "c"):
        effect_c(args.seeds or 3, 45.0, 0.3, ("random-32-32-10", 150), 6)


if __name__ == "__main__":
    main()
