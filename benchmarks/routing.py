"""Routing's LNS speed and first plans, each measured side by side in one run.

- ``sipp``: the compiled SIPP against the Python one on the same searches (``--calls`` robots of the
  first plan, each re-planned against every other robot's path, with no arrival bound or one 0-10 steps
  above its cost, as an LNS step asks); passes alternate and the second of each is kept, so kernels and
  distance arrays are warm. Microseconds per search, the ratio, and how many answers are identical.
- ``index``: what the LNS pays per path for its occupancy index (``remove`` + ``add`` of one robot's path
  in a full plan) and what a merge pays for a copy of it, several git refs side by side: ``--ops``/100
  copies of a fresh index, then ``--ops`` robots out and back in, the best of ``--repeats`` passes.
- ``contract``: what the coordinator pays to write a lease's contract, several git refs side by side: a
  sequence of ``--steps`` plans, each with ``--changed`` robots' paths changed from the last (a merge's
  share), and per plan the contract of a whole-plan lease (a team's) and of a lease of ``--robots`` robots;
  milliseconds per contract, the best of ``--repeats`` passes, and a checksum of every contract's text
  (the same in every ref, or the refs wrote different contracts).
- ``trace``: one agent on one block, in-process (no coordinator, no HTTP: the LNS alone), several git refs
  side by side, per seed the refs' order rotating: the best collision-free SOC at fixed times, the final
  SOC, the proposals and the LNS steps (``BlockSearch.try_group`` calls), to read against MAPF-LNS2's log.
- ``stop-rule``: ``blockopt run routing`` through the product's path (embedded coordinator, agent
  processes over HTTP) with a time limit, the old stop rule (k empty rounds alone, reproduced exactly by
  ``--stall-seconds 1e-9``) and the default one (weighed in time: ``coordinator/reports/stopping.py``)
  interleaved per seed: final SOC, stop time, last improvement, rounds, primal integral.
- ``first-plan``: the first plan's ``initial`` values (shortest paths, prioritized with repair) back to
  back per instance, our team in-process (``run_team``, 2 blocks per agent): time to the first
  collision-free plan and SOC/LB at the limit (warehouse k=400 is issue 13's routing target).

A ref runs from its ``git archive`` in a process of its own importing that tree (``benchmarks/lib/refs.py``).

    .venv/bin/python -m benchmarks.routing sipp --json benchmarks/results/routing_sipp_jit.json
    .venv/bin/python -m benchmarks.routing index --refs c8ac401 HEAD --json out.json
    .venv/bin/python -m benchmarks.routing contract --refs 12ce1e3 HEAD --json out.json
    .venv/bin/python -m benchmarks.routing trace --refs 83e4337 HEAD --only room-32-32-4:50 --seeds 0 1 2
    .venv/bin/python -m benchmarks.routing first-plan --only warehouse-10-20-10-2-1:400 --agents 6 --limit 120
    .venv/bin/python -m benchmarks.routing stop-rule --dir benchmarks/results/stop_rule
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from typing import Any

# Only the standard library up here: a worker runs this file against an exported tree, which may predate
# benchmarks/lib; the parent imports the helpers in main().

TIMES = (2, 5, 8, 10, 15, 20, 30)
SIPP_INSTANCES = [
    "random-32-32-10:100",
    "random-32-32-10:300",
    "room-32-32-4:100",
    "warehouse-10-20-10-2-1:200",
]
FIRST_PLAN_CASES = ["random-32-32-10:50", "random-32-32-10:100", "random-32-32-10:200"]


def _make_task(*args: Any, **kwargs: Any) -> Any:
    """The routing harness's ``make_task`` of whichever tree this process imports."""
    try:
        from benchmarks.lib.routing import make_task
    except ImportError:  # a tree from before benchmarks/lib
        from benchmarks.routing_common import make_task  # type: ignore[no-redef]
    return make_task(*args, **kwargs)


# -- workers: one run importing an exported tree ----------------------------------------------------------
def index_pass(map_name: str, k: int, ops: int) -> dict[str, Any]:
    """Microseconds per remove + add and per copy of the occupancy index, and the mean path length."""
    from tasks.routing.occupancy import OccupancyIndex

    task = _make_task(map_name, f"{map_name}-random-1", k, 1, seed=0, exact_limit=0)
    paths = dict(enumerate(task.initial_state().paths))
    index = OccupancyIndex.build(task.grid.n_cells, paths)
    copies = max(1, ops // 100)
    t0 = time.perf_counter()
    for _ in range(copies):  # before the churn: a dict after thousands of deletions copies slower
        index.copy()
    copy_seconds = (time.perf_counter() - t0) / copies
    rng = random.Random(0)
    robots = [rng.randrange(k) for _ in range(ops)]
    t0 = time.perf_counter()
    for r in robots:
        index.remove(r, paths[r])
        index.add(r, paths[r])
    seconds = time.perf_counter() - t0
    mean_len = sum(len(p) for p in paths.values()) / k
    return {"us_per_remove_add": round(seconds / ops * 1e6, 2), "us_per_copy": round(copy_seconds * 1e6, 1),
            "mean_path_len": round(mean_len, 1)}  # fmt: skip


def contract_pass(map_name: str, k: int, steps: int, changed: int, lease: int) -> dict[str, Any]:
    """Milliseconds per contract over a sequence of plans, for a whole-plan lease and a lease of ``lease``
    robots, and the CRC-32 of every contract's text."""
    import dataclasses
    import zlib

    task = _make_task(map_name, f"{map_name}-random-1", k, 1, seed=0, exact_limit=0)
    state = task.initial_state()
    rng = random.Random(0)
    plans = []
    for _ in range(steps):  # a wait at the start of some paths: new path objects, as a merge writes them
        paths = list(state.paths)
        for r in rng.sample(range(k), min(changed, k)):
            paths[r] = paths[r][:1] + paths[r]
        state = dataclasses.replace(state, paths=tuple(paths))
        plans.append(state)
    whole = state.blocks[0]
    some = tuple(sorted(rng.sample(range(k), min(lease, k))))
    row: dict[str, Any] = {}
    crc = 0
    for name, robots in (("whole", whole), ("lease", some)):
        t0 = time.perf_counter()
        for plan in plans:
            rendered = task.contract(dataclasses.replace(plan, blocks=(robots,)), 0)
            crc = zlib.crc32(rendered.json.encode(), crc)
        row[f"ms_{name}"] = round((time.perf_counter() - t0) / steps * 1e3, 3)
    row["crc32"] = crc
    return row


def trace_run(map_name: str, k: int, seed: int, limit: float, params: str = "{}") -> dict[str, Any]:
    """One agent's LNS for ``limit`` seconds; ``params``: further task parameters (JSON)."""
    from tasks.routing.repair import BlockSearch

    steps = 0
    try_group = BlockSearch.try_group

    def counted(self: Any, *args: Any) -> Any:
        nonlocal steps
        steps += 1
        return try_group(self, *args)

    warm = _make_task("empty-16-16", "empty-16-16-random-1", 5, 1, exact_limit=0)  # compiles SIPP, untimed
    contract = {"block": 0, "data": warm.contract(warm.initial_state(), 0)}
    warm.make_proposer(warm.ProposerParams()).propose(contract)
    extra = {"seed": seed, "exact_limit": 0, **json.loads(params)}
    task = _make_task(map_name, f"{map_name}-random-1", k, 1, **extra)
    BlockSearch.try_group = counted  # type: ignore[method-assign]
    t0 = time.perf_counter()
    state = task.initial_state()
    proposer = task.make_proposer(task.ProposerParams(), seed=seed)
    points = [(time.perf_counter() - t0, state.soc, state.conflicts)]
    proposals = 0
    while (left := limit - (time.perf_counter() - t0)) > 0:
        contract = {"block": 0, "data": task.contract(state, 0), "budget": {"seconds": left}}
        draft = proposer.propose(contract)
        proposals += 1
        if draft is None:
            continue
        new = task.apply(state, {0: task.validate(0, draft.value)})
        if task.objective(new) < task.objective(state):
            state = new
            points.append((time.perf_counter() - t0, state.soc, state.conflicts))

    def best_at(t: float) -> int | None:
        return min((soc for at, soc, c in points if at <= t and c == 0), default=None)

    return {
        "final": state.soc if state.conflicts == 0 else None,
        "conflicts": state.conflicts,
        "lower_bound": task.lower_bound(),
        "proposals": proposals,
        "lns_steps": steps,
        "soc_at": {str(t): best_at(t) for t in TIMES if t <= limit},
    }


def worker(command: str, args: list[str]) -> int:
    """``routing.py COMMAND --worker ARGS...``: one run, its row as the last line of stdout."""
    if command == "index":
        map_name, k, ops = args
        row = index_pass(map_name, int(k), int(ops))
    elif command == "contract":
        map_name, k, steps, changed, lease = args
        row = contract_pass(map_name, int(k), int(steps), int(changed), int(lease))
    else:
        map_name, k, seed, limit, params = args
        row = trace_run(map_name, int(k), int(seed), float(limit), params)
    print(json.dumps(row))
    return 0


def in_tree(tree: str, command: str, *args: str) -> dict[str, Any]:
    """One worker run of this file against ``tree``: its row."""
    from benchmarks.lib.refs import tree_env

    cmd = [sys.executable, __file__, command, "--worker", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=tree_env(tree))
    row: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return row


# -- the parent side of each command ---------------------------------------------------------------------
def sipp(args: argparse.Namespace) -> int:
    from tasks.routing.reservations import Reservations
    from tasks.routing.sipp import sipp_search, sipp_search_python

    rows = []
    print("| instance | calls | paths found | Python µs per search | compiled µs | ratio | identical |")
    print("|---|---|---|---|---|---|---|")
    for map_name, k in args.instances:
        task = _make_task(map_name, f"{map_name}-random-1", int(k), 1)
        grid, inst = task.grid, task.inst
        paths = list(task.initial_state().paths)
        rng = random.Random(args.seed)
        cases = []
        for _ in range(args.calls):
            i = rng.randrange(len(paths))
            table = Reservations(grid.n_cells)
            for j, p in enumerate(paths):
                if j != i:
                    table.add_path(p)
            table.arrays(grid.width)
            grid.distance_array(inst.goals[i])
            extra = rng.choice([None, 0, 2, 10])
            bound = None if extra is None else len(paths[i]) - 1 + extra
            cases.append((inst.starts[i], inst.goals[i], table, bound))
        seconds: dict[str, float] = {}
        answers: dict[str, list[Any]] = {}
        for fn in (sipp_search_python, sipp_search, sipp_search_python, sipp_search):
            t0 = time.perf_counter()
            answers[fn.__name__] = [fn(grid, s, g, t, inst.max_len, bound=b) for s, g, t, b in cases]
            seconds[fn.__name__] = time.perf_counter() - t0
        python_us = seconds["sipp_search_python"] / args.calls * 1e6
        compiled_us = seconds["sipp_search"] / args.calls * 1e6
        pairs = zip(answers["sipp_search_python"], answers["sipp_search"], strict=True)
        r = {"instance": f"{map_name} k={k}", "calls": args.calls,
             "found": sum(a[0] is not None for a in answers["sipp_search"]),
             "python_us": round(python_us, 1), "compiled_us": round(compiled_us, 1),
             "ratio": round(python_us / compiled_us, 2),
             "identical": sum(a == b for a, b in pairs)}  # fmt: skip
        rows.append(r)
        print(f"| {r['instance']} | {r['calls']} | {r['found']} | {r['python_us']:,} | {r['compiled_us']:,} "
              f"| {r['ratio']} | {r['identical']}/{r['calls']} |", flush=True)  # fmt: skip
    return _written(args, {"rows": rows})


def index(args: argparse.Namespace) -> int:
    from benchmarks.lib.refs import exported

    rows: list[dict[str, Any]] = []
    with exported(args.refs, "routing index") as trees:
        for map_name, k in args.instances:
            passes: dict[str, list[dict[str, Any]]] = {ref: [] for ref in args.refs}
            for _ in range(args.repeats):  # the refs in turn per pass: a change of load hits them alike
                for ref in args.refs:
                    passes[ref].append(in_tree(trees[ref], "index", map_name, k, str(args.ops)))
            first = min(p["us_per_remove_add"] for p in passes[args.refs[0]])
            for ref in args.refs:
                best = min(p["us_per_remove_add"] for p in passes[ref])
                row = {"ref": ref, "instance": f"{map_name} k={k}", "us_per_remove_add": best,
                       "us_per_copy": min(p["us_per_copy"] for p in passes[ref]),
                       "mean_path_len": passes[ref][0]["mean_path_len"],
                       f"ratio_to_{args.refs[0]}": round(best / first, 3),
                       "passes": [p["us_per_remove_add"] for p in passes[ref]]}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
    return _written(args, {"ops": args.ops, "repeats": args.repeats, "refs": args.refs, "rows": rows})


def contract(args: argparse.Namespace) -> int:
    from benchmarks.lib.refs import exported

    rows: list[dict[str, Any]] = []
    with exported(args.refs, "routing contract") as trees:
        for map_name, k in args.instances:
            passes: dict[str, list[dict[str, Any]]] = {ref: [] for ref in args.refs}
            for _ in range(args.repeats):  # the refs in turn per pass
                for ref in args.refs:
                    step = (map_name, k, str(args.steps), str(args.changed), str(args.robots))
                    passes[ref].append(in_tree(trees[ref], "contract", *step))
            first = min(p["ms_whole"] for p in passes[args.refs[0]])
            for ref in args.refs:
                whole = min(p["ms_whole"] for p in passes[ref])
                row = {"ref": ref, "instance": f"{map_name} k={k}", "ms_whole": whole,
                       "ms_lease": min(p["ms_lease"] for p in passes[ref]),
                       f"whole_ratio_to_{args.refs[0]}": round(whole / first, 3),
                       "crc32": sorted({p["crc32"] for p in passes[ref]})}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
    raw = {"steps": args.steps, "changed": args.changed, "robots": args.robots, "repeats": args.repeats}
    return _written(args, {**raw, "refs": args.refs, "rows": rows})


def trace(args: argparse.Namespace) -> int:
    from benchmarks.lib.refs import exported

    rows: list[dict[str, Any]] = []
    with exported(args.refs, "routing trace") as trees:
        turn = 0
        for map_name, k in args.instances:
            for seed in args.seeds:
                order = args.refs[turn % len(args.refs) :] + args.refs[: turn % len(args.refs)]
                turn += 1
                for ref in order:
                    found = in_tree(trees[ref], "trace", map_name, k, str(seed), str(args.limit), args.params)
                    row = {"ref": ref, "instance": f"{map_name} k={k}", "seed": seed, **found}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    extra = json.loads(args.params)
    return _written(args, {"limit": args.limit, "refs": args.refs, "params": extra, "rows": rows})


def first_plan(args: argparse.Namespace) -> int:
    from benchmarks.lib.routing import run_team

    rows: list[dict[str, Any]] = []
    for m, k in args.instances:
        for init, seed in ((i, s) for i in args.starts for s in range(args.seeds)):
            task = _make_task(m, f"{m}-random-1", int(k), 2 * args.agents, initial=init, seed=seed)
            r = run_team(task, args.agents, time_limit=args.limit, seed=seed)
            row = {"instance": f"{m} k={k}", "initial": init, "seed": seed,
                   "load": round(os.getloadavg()[0], 2),
                   "when": time.strftime("%H:%M:%S UTC", time.gmtime()), "valid": r.feasible, "soc": r.soc,
                   "lb": r.lower_bound, "ratio": round(r.soc / r.lower_bound, 4), "rounds": r.rounds,
                   "first_feasible_s": None if r.first_feasible_s is None else round(r.first_feasible_s, 1),
                   "conflicts": r.verdict.conflicts if r.verdict else None}  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
    meta = {"agents": args.agents, "limit": args.limit, "blocks": 2 * args.agents, "harness": "run_team"}
    return _written(args, {"meta": meta, "rows": rows})


STOP_RULES = {"count (old)": ["--stall-seconds", "1e-9"], "time (new)": []}
"""The rules ``stop-rule`` compares: the old count of empty rounds (a tiny stall_seconds), the default."""


def stop_rule_run(m: str, k: int, seed: int, args: argparse.Namespace, rule: str) -> dict[str, Any]:
    """One ``blockopt run routing`` with ``rule``; its report's numbers."""
    report = os.path.join(args.dir, f"{m}-k{k}-s{seed}-{rule.split()[0]}.json")
    cmd = [sys.executable, "-m", "blockopt", "run", "routing", "--map", m, "--scen", "random-1",
           "--robots", str(k), "--seed", str(seed), "--agents", str(args.agents), "--time-limit",
           str(args.limit), "--quiet", "--report", report, *STOP_RULES[rule]]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.limit * 4 + 120)
    if done.returncode != 0:
        raise SystemExit(f"routing stop-rule: {' '.join(cmd)} failed: {done.stderr.strip()[-300:]}")
    data = json.loads(open(report).read())
    anytime = data["anytime"]
    return {"instance": f"{m} k={k}", "seed": seed, "rule": rule, "final": data["objective"]["final"],
            "lb": data["objective"]["reference"], "stop_s": data["wall_s"], "rounds": data["rounds"],
            "status": data["status"], "last_improvement_s": anytime["points"][-1][0],
            "primal_integral_normalized": anytime["primal_integral_normalized"],
            "load": round(os.getloadavg()[0], 2)}  # fmt: skip


def stop_rule(args: argparse.Namespace) -> int:
    os.makedirs(args.dir, exist_ok=True)
    print(f"{args.agents} agents, --time-limit {args.limit:g}; old rule = --stall-seconds 1e-9")
    print("| instance | seed | rule | final | LB | stop s | last improvement s | rounds | status | PI/T |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---:|")
    rows = []
    for m, k in args.instances:
        for seed in range(1, args.seeds + 1):
            for rule in STOP_RULES:  # interleaved per seed: the machine's load hits both rules alike
                r = stop_rule_run(m, int(k), seed, args, rule)
                rows.append(r)
                print(f"| {r['instance']} | {seed} | {rule} | {r['final']:g} | {r['lb']:g} | "
                      f"{r['stop_s']:.1f} | {r['last_improvement_s']:.1f} | {r['rounds']} | {r['status']} | "
                      f"{r['primal_integral_normalized']:.5f} |", flush=True)  # fmt: skip
    for name in dict.fromkeys(r["instance"] for r in rows):
        old = [r for r in rows if r["instance"] == name and r["rule"] == "count (old)"]
        new = [r for r in rows if r["instance"] == name and r["rule"] == "time (new)"]
        lower = sorted(o["final"] - n["final"] for o, n in zip(old, new, strict=True))
        longer = sorted(n["stop_s"] / o["stop_s"] for o, n in zip(old, new, strict=True))
        print(f"{name}: final SOC lower by {lower} (new rule); stop time x{[round(x, 2) for x in longer]}")
    return _written(args, {"meta": {"agents": args.agents, "limit": args.limit}, "rows": rows})


def _written(args: argparse.Namespace, raw: dict[str, Any]) -> int:
    if args.json:
        from benchmarks.lib.cli import write_json

        print(f"wrote {write_json(args.json, raw)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 and argv[1] == "--worker":
        return worker(argv[0], argv[2:])
    from benchmarks.lib.cli import Parser, instances

    ap = Parser(prog="routing", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sipp", help="compiled against Python SIPP, the same searches")
    s.add_argument("--only", nargs="+", default=SIPP_INSTANCES, metavar="MAP:K")
    s.add_argument("--calls", type=int, default=200)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(run=sipp)
    i = sub.add_parser("index", help="the occupancy index per path and per copy, git refs side by side")
    i.add_argument("--refs", nargs="+", default=["HEAD"], help="git refs of this repository")
    i.add_argument("--only", nargs="+", default=["warehouse-10-20-10-2-1:200", "random-32-32-10:300"])
    i.add_argument("--ops", type=int, default=2000, help="paths taken out and put back per pass")
    i.add_argument("--repeats", type=int, default=5, help="passes per ref and instance (the best is kept)")
    i.set_defaults(run=index)
    c = sub.add_parser("contract", help="a lease's contract, whole plan and a share, git refs side by side")
    c.add_argument("--refs", nargs="+", default=["HEAD"], help="git refs of this repository")
    c.add_argument("--only", nargs="+", default=["random-32-32-10:300", "warehouse-10-20-10-2-1:200"])
    c.add_argument("--steps", type=int, default=300, help="plans in the sequence (one contract each)")
    c.add_argument("--changed", type=int, default=14, help="paths changed from one plan to the next")
    c.add_argument("--robots", type=int, default=60, help="robots of the smaller lease")
    c.add_argument("--repeats", type=int, default=5, help="passes per ref and instance (the best is kept)")
    c.set_defaults(run=contract)
    t = sub.add_parser("trace", help="one agent's LNS over time, git refs side by side")
    t.add_argument("--refs", nargs="+", default=["HEAD"], help="git refs of this repository")
    t.add_argument("--only", nargs="+", default=["warehouse-10-20-10-2-1:200"], metavar="MAP:K")
    t.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    t.add_argument("--limit", type=float, default=30.0)
    t.add_argument(
        "--params", default="{}", help='further task parameters, JSON (e.g. \'{"initial": "shortest"}\')'
    )
    t.set_defaults(run=trace)
    f = sub.add_parser("first-plan", help="the first plan's starts back to back, the team in-process")
    f.add_argument("--limit", type=float, default=30.0)
    f.add_argument("--agents", type=int, default=3)
    f.add_argument("--only", nargs="+", default=FIRST_PLAN_CASES, metavar="MAP:K")
    f.add_argument(
        "--starts", nargs="+", default=["shortest", "prioritized"], choices=["shortest", "prioritized"]
    )
    f.add_argument("--seeds", type=int, default=1, help="runs per instance and start (seeds 0..N-1)")
    f.set_defaults(run=first_plan)
    r = sub.add_parser("stop-rule", help="the old and the default stop rule side by side, the product's path")
    r.add_argument("--only", nargs="+", default=["random-32-32-10:50", "room-32-32-4:50"], metavar="MAP:K")
    r.add_argument("--seeds", type=int, default=2, help="runs per instance and rule (seeds 1..N)")
    r.add_argument("--limit", type=float, default=60.0, help="--time-limit of each run")
    r.add_argument("--agents", type=int, default=3)
    r.add_argument("--dir", required=True, help="folder for the runs' reports")
    r.set_defaults(run=stop_rule)
    for p in (s, i, c, t, f, r):
        p.add_argument("--json", default=None, help="write the raw rows here")
    args = ap.parse_args(argv)
    prog = f"routing {args.command}"
    if min(getattr(args, name, 1) for name in ("calls", "ops", "repeats", "agents", "steps", "robots")) < 1:
        ap.error("--calls, --ops, --repeats, --agents, --steps and --robots want a positive count")
    if getattr(args, "changed", 0) < 0:
        ap.error("--changed wants 0 or more paths")
    if args.command == "trace":
        try:
            extra = json.loads(args.params)
        except json.JSONDecodeError as exc:
            extra = exc
        if not isinstance(extra, dict):
            from benchmarks.lib.cli import fail

            fail(prog, f"--params wants a JSON object, got {args.params!r}")
    args.instances = instances(args.only, prog)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
