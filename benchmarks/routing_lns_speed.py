"""LNS steps per second and SOC at the time limit, before and after, the two trees alternating in one run.

The team of ``benchmarks/mapf_sota.py`` (``--agents`` agents in-process, twice as many blocks, the first k
robots of the map's ``random-1`` scenario, ``--limit`` seconds) runs once per tree, instance and seed,
each in its own process importing that tree: ``before`` is a ``git archive`` of ``--before-ref`` (or the
tree given by ``--before-tree``), ``after`` this checkout; ``--variant NAME:JSON`` adds a run of this
checkout with further proposer knobs (e.g. ``after-full-budget:{"stop_after": 0}``). The runs of one
seed and instance follow each other, so a change of machine load hits every tree alike. Per run: SOC /
lower bound, rounds, LNS steps (``BlockSearch.try_group`` calls, both phases), SIPP searches made by the
LNS (``repair.py``'s calls) and proposals.

    flock /work/bench.lock .venv/bin/python benchmarks/routing_lns_speed.py --before-ref 9c0358e \\
        --only room-32-32-4:100 empty-16-16:100 --seeds 0 1 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def worker(
    tree: str, map_name: str, k: int, agents: int, limit: float, seed: int, knobs: str
) -> dict[str, Any]:
    """One team run importing ``tree``, counting the LNS's steps and searches."""
    sys.path.insert(0, tree)
    from benchmarks.routing_common import make_task, run_team
    from tasks.routing import repair

    counts = {"lns_steps": 0, "sipp_searches": 0, "proposals": 0}

    def counted(fn: Any, key: str) -> Any:
        def wrapped(*a: Any, **kw: Any) -> Any:
            counts[key] += 1
            return fn(*a, **kw)

        return wrapped

    repair.BlockSearch.try_group = counted(repair.BlockSearch.try_group, "lns_steps")  # type: ignore[method-assign]
    for name in ("sipp_path", "sipp_search"):  # the tree before has only the first
        if hasattr(repair, name):
            setattr(repair, name, counted(getattr(repair, name), "sipp_searches"))
    task = make_task(map_name, f"{map_name}-random-1", k, agents * 2)
    t0 = time.perf_counter()
    task.initial_state()
    first_plan_s = time.perf_counter() - t0
    original = task.make_proposer

    def make(knobs_: Any, seed_: int = 0) -> Any:
        inner = original(knobs_, seed_)
        inner.propose = counted(inner.propose, "proposals")  # type: ignore[method-assign]
        return inner

    task.make_proposer = make  # type: ignore[method-assign]
    extra = json.loads(knobs)
    kwargs = {"knobs": extra} if extra else {}
    team = run_team(task, agents, time_limit=limit, seed=seed, **kwargs)
    return {
        "valid": team.feasible,
        "soc": team.soc,
        "lower_bound": team.lower_bound,
        "ratio": round(team.soc / team.lower_bound, 4),
        "rounds": team.rounds,
        "seconds": round(team.seconds, 2),
        "first_plan_s": round(first_plan_s, 2),
        "first_feasible_s": team.first_feasible_s,
        **counts,
        "lns_steps_per_s": round(counts["lns_steps"] / team.seconds, 1),
        "sipp_per_s": round(counts["sipp_searches"] / team.seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before-ref", default="main", help="git ref exported as the 'before' tree")
    ap.add_argument("--before-tree", default=None, help="an existing tree to use as 'before' instead")
    ap.add_argument("--only", nargs="+", default=["room-32-32-4:100", "empty-16-16:100"], metavar="MAP:K")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME:JSON", help="extra 'after' run")
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        tree, m, k, agents, limit, seed, knobs = args.worker
        print(json.dumps(worker(tree, m, int(k), int(agents), float(limit), int(seed), knobs)))
        return 0
    with tempfile.TemporaryDirectory() as base:
        before = args.before_tree
        if before is None:
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.before_ref], capture_output=True
            )
            if archive.returncode != 0:
                print(
                    f"routing_lns_speed: cannot export {args.before_ref}: {archive.stderr.decode()}",
                    file=sys.stderr,
                )
                return 2
            subprocess.run(["tar", "-x", "-C", base], input=archive.stdout, check=True)
            before = base
        runs: list[tuple[str, str, str]] = [("before", before, "{}"), ("after", str(ROOT), "{}")]
        for v in args.variant:
            name, _, knobs = v.partition(":")
            runs.append((name, str(ROOT), knobs or "{}"))
        rows: list[dict[str, Any]] = []
        for seed in args.seeds:
            for spec in args.only:
                m, k = spec.split(":")
                for name, tree, knobs in runs:
                    cmd = [sys.executable, __file__, "--worker", tree, m, k, str(args.agents)]
                    cmd += [str(args.limit), str(seed), knobs]
                    env = {**os.environ, "PYTHONPATH": tree}
                    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
                    if done.returncode != 0:
                        print(done.stderr, file=sys.stderr)
                        return 1
                    row = {"instance": f"{m} k={k}", "tree": name, "seed": seed, "knobs": json.loads(knobs)}
                    row.update(load=round(os.getloadavg()[0], 1), **json.loads(done.stdout))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    _table(rows, [r[0] for r in runs])
    if args.json:
        meta = {
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "before": args.before_tree or args.before_ref,
            "after": subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
            ).stdout.strip(),
            "agents": args.agents,
            "limit": args.limit,
            "seeds": args.seeds,
        }
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def _table(rows: list[dict[str, Any]], trees: list[str]) -> None:
    """Per instance and tree: mean SOC/LB (min-max), LNS steps/s, SIPP searches/s and rounds (means)."""
    print("\n| instance | tree | runs | SOC/LB mean (min-max) | LNS steps/s | SIPP searches/s | rounds |")
    print("|---|---|---|---|---|---|---|")
    for inst in dict.fromkeys(r["instance"] for r in rows):
        for t in trees:
            got = [r for r in rows if r["instance"] == inst and r["tree"] == t]
            if not got:
                continue
            ratios = [r["ratio"] if r["valid"] else float("nan") for r in got]
            spread = f"{statistics.mean(ratios):.4f} ({min(ratios):.4f}-{max(ratios):.4f})"
            print(
                f"| {inst} | {t} | {len(got)} | {spread}"
                f" | {statistics.mean(r['lns_steps_per_s'] for r in got):.0f}"
                f" | {statistics.mean(r['sipp_per_s'] for r in got):.0f}"
                f" | {statistics.mean(r['rounds'] for r in got):.1f} |"
            )


if __name__ == "__main__":
    raise SystemExit(main())
