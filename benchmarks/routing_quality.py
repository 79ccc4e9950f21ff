"""Quality at a fixed time limit: our team (3 agents, checked merging) vs PyPI ``pymapf``'s strongest solvers.

Every plan, ours and pymapf's, is checked by our independent validator; a row
shows SOC / lower bound (Σ 4-connected BFS distances), collision-free or not,
and seconds. pymapf runs in a child process with a hard timeout (limit + 5 s),
because some of its solvers (prioritized) have no time limit of their own.
pymapf is a benchmark-only dependency (``pip install -e '.[bench]'``).

    .venv/bin/python benchmarks/routing_quality.py --limit 30            # the full list
    .venv/bin/python benchmarks/routing_quality.py --limit 30 --subset   # random-1 of each case only
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import queue
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.routing_common import check, make_task, run_team  # noqa: E402

CASES: list[tuple[str, int, list[int]]] = [
    ("random-32-32-10", 50, [1, 2, 3, 4, 5]),
    ("random-32-32-10", 100, [1]),
    ("warehouse-10-20-10-2-1", 50, [1]),
    ("warehouse-10-20-10-2-1", 100, [1]),
    ("empty-16-16", 50, [1]),
    ("maze-32-32-2", 20, [1]),
]
PYMAPF = ["lacam-anytime", "prioritized", "wcbs-1.5", "lns"]


def _pymapf_child(
    rows: list[str],
    agents: list[tuple[tuple[int, int], tuple[int, int]]],
    solver: str,
    limit: float,
    out: Any,
) -> None:
    import pymapf

    grid = pymapf.GridMap([[0 if ch in ".G" else 1 for ch in row] for row in rows])
    problem = pymapf.MAPFProblem(
        grid, [pymapf.Agent(f"a{i}", (s[1], s[0]), (g[1], g[0])) for i, (s, g) in enumerate(agents)]
    )
    make = {
        "lacam-anytime": lambda: pymapf.LaCAM(anytime=True, time_limit=limit),
        "prioritized": lambda: pymapf.PrioritizedPlanning(),
        "wcbs-1.5": lambda: pymapf.WeightedCBS(weight=1.5, time_limit=limit, max_expansions=10**9),
        "lns": lambda: pymapf.LargeNeighborhoodSearch(time_limit=limit),
    }[solver]
    t0 = time.perf_counter()
    try:
        sol = make().solve(problem)
    except Exception as exc:  # a crash is a result too
        out.put({"error": f"{type(exc).__name__}: {exc}"[:120], "seconds": time.perf_counter() - t0})
        return
    seconds = time.perf_counter() - t0
    if sol is None:
        out.put({"error": "no solution", "seconds": seconds})
        return
    paths = [[(c[1], c[0]) for c in sol.paths[f"a{i}"]] for i in range(len(agents))]
    out.put({"paths": paths, "seconds": seconds})


def run_pymapf(task: Any, solver: str, limit: float) -> dict[str, Any]:
    g = task.grid
    agents = [(g.xy(s), g.xy(t)) for s, t in zip(task.inst.starts, task.inst.goals, strict=True)]
    ctx = mp.get_context("fork")
    out: Any = ctx.Queue()
    proc = ctx.Process(target=_pymapf_child, args=(g.rows(), agents, solver, limit, out))
    t0 = time.perf_counter()
    proc.start()
    try:  # read before joining: a child with a large result cannot exit until it is read
        res = out.get(timeout=limit + 5)
    except queue.Empty:
        res = None
    proc.join(1)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if res is None:
        status = "timeout" if proc.exitcode in (None, -9) else "crashed"
        return {"solver": solver, "status": status, "seconds": time.perf_counter() - t0}
    if "error" in res:
        return {"solver": solver, "status": res["error"], "seconds": res["seconds"]}
    verdict = check(task, res["paths"])
    return {
        "solver": solver,
        "status": "ok"
        if verdict.valid
        else f"{verdict.conflicts} conflicts"
        if not verdict.errors
        else verdict.errors[0][:60],
        "feasible": verdict.valid,
        "soc": verdict.soc,
        "seconds": res["seconds"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--subset", action="store_true", help="scenario random-1 only")
    ap.add_argument("--no-pymapf", action="store_true")
    ap.add_argument("--pymapf-subset", action="store_true", help="pymapf on scenario random-1 only")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--partition", default="spatial", help="our initial block partition (the product default)"
    )
    ap.add_argument(
        "--ablate-regroup",
        action="store_true",
        help="also run our team with regrouping off (the row before regrouping existed)",
    )
    ap.add_argument("--only", default=None, help="run only cases whose map name contains this")
    ap.add_argument("--robots", type=int, default=None, help="run only cases with this many robots")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    print("| instance | k | solver | collision-free | SOC | SOC / LB | seconds |")
    print("|---|---:|---|---|---:|---:|---:|")
    for map_name, k, scens in CASES:
        if (args.only and args.only not in map_name) or (args.robots and args.robots != k):
            continue
        for i in scens[:1] if args.subset else scens:
            task = make_task(map_name, f"random-{i}", k, 3, exact_limit=0, partition=args.partition)
            lb = task.lower_bound()
            name = f"{map_name} random-{i}"
            arms = [("blockopt 3 agents (checked)", task)]
            if args.ablate_regroup:
                arms.append(
                    (
                        "blockopt, no regrouping",
                        make_task(
                            map_name,
                            f"random-{i}",
                            k,
                            3,
                            exact_limit=0,
                            partition=args.partition,
                            regroup=False,
                        ),
                    )
                )
            results = []
            for label, team_task in arms:
                ours = run_team(team_task, 3, merge="checked", time_limit=args.limit, time_budget=0.5, seed=0)
                results.append(
                    {
                        "solver": label,
                        "feasible": ours.feasible,
                        "soc": ours.soc,
                        "seconds": ours.seconds,
                        "rounds": ours.rounds,
                        "status": "ok"
                        if ours.feasible
                        else f"{ours.verdict.conflicts if ours.verdict else '?'} conflicts",
                    }
                )
            if not args.no_pymapf and not (args.pymapf_subset and i != 1):
                results += [run_pymapf(task, s, args.limit) for s in PYMAPF]
            for r in results:
                soc = r.get("soc")
                ratio = f"{soc / lb:.3f}" if isinstance(soc, int) and soc > 0 else "-"
                free = "yes" if r.get("feasible") else f"no ({r['status']})"
                print(
                    f"| {name} | {k} | {r['solver']} | {free} | {r.get('soc', '-')} | {ratio} | {r['seconds']:.1f} |",
                    flush=True,
                )
                rows.append({"instance": name, "k": k, "lb": lb, **r})
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
