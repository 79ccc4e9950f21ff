"""Anchor against the field's reference MAPF solvers: MAPF-LNS2 (Li et al. 2022) and LaCAM3 (Okumura 2024).

Both are built from source trees the caller points to (``--lns2-src``, ``--lacam3-src``), with cmake,
into a cache OUTSIDE the repository (``$BLOCKOPT_CACHE/sota-build`` or ``~/.cache/blockopt/sota-build``,
keyed by the tree's git commit). Nothing of theirs is vendored or copied: we only run their binaries and
parse the paths they write. A solver whose tree is missing or whose build fails is skipped with the
reason in the output. Every plan, theirs and ours, goes through our independent validator
(``tasks/routing/validator.py``), and rows are written raw as JSON.

The instances are the first k robots of each map's ``random-1`` scenario; every solver gets the same
wall-clock limit (LNS2 is single-threaded; LaCAM3 runs with ``--no-multi-thread``). Our team runs
in-process by default, its agents taking turns on one core (``--teams inproc``); ``--teams rounds`` and
``--teams async`` run it as the product runs it instead, ``blockopt run routing`` with an embedded
coordinator and one worker process per agent over HTTP (rounds mode, or merge on arrival), so the agents
share the machine's cores; ``--teams async-stalled`` is async mode with the old regrouping rule (only after
an empty round, ``--regroup-after stalled``); ``--teams hold`` is rounds mode with adaptive selection
(``--selection ucb1 --hold``: the blocks that did not pay are formed anew after every round). ``--agents 1 2
3`` gives a column per team size. Instances run one after the other.

``--seeds S... --dir OUT`` runs every instance and seed in a call of its own (one raw JSON each,
``OUT/MAP-K-sSEED.json``). ``--refs REF... --dir OUT`` runs our team (no reference solver) from each git
ref's ``git archive``, each warmed up first (its compiled SIPP cached), then per seed and instance the refs
one after the other, their order rotating, so a change of load hits them alike (``OUT/REF-MAP-K-sSEED.json``).

    .venv/bin/python -m benchmarks.mapf_sota --quick --lns2-src /work/ext/lns2 --lacam3-src /work/ext/lacam3
    .venv/bin/python -m benchmarks.mapf_sota --limit 30 --lns2-src ... --lacam3-src ... --json out.json
    .venv/bin/python -m benchmarks.mapf_sota --teams inproc async --only room-32-32-4:100 --lns2-src ...
    .venv/bin/python -m benchmarks.mapf_sota --lns2-src ... --teams async --no-stall --seeds 0 1 2 --dir OUT
    .venv/bin/python -m benchmarks.mapf_sota --refs 83e4337 HEAD --teams async --no-stall --seeds 1 2 \\
        --only empty-16-16:100 --dir OUT
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.lib.cli import Parser, fail, instances, write_json
from benchmarks.lib.refs import exported, tree_env
from benchmarks.lib.routing import check, make_task, run_team
from tasks.routing import RoutingTask, movingai

XY = tuple[int, int]

FULL: list[tuple[str, int]] = [
    ("random-32-32-10", 50),
    ("random-32-32-10", 100),
    ("random-32-32-10", 200),
    ("random-32-32-10", 300),
    ("warehouse-10-20-10-2-1", 50),
    ("warehouse-10-20-10-2-1", 100),
    ("warehouse-10-20-10-2-1", 200),
    ("room-32-32-4", 50),
    ("room-32-32-4", 100),
    ("empty-16-16", 50),
    ("empty-16-16", 100),
    ("maze-32-32-2", 20),
]
QUICK: list[tuple[str, int]] = [("random-32-32-10", 50), ("warehouse-10-20-10-2-1", 100)]


@dataclass
class Solver:
    name: str
    binary: Path | None
    commit: str | None
    skipped: str | None


def cache_root() -> Path:
    base = os.environ.get("BLOCKOPT_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "blockopt") / "sota-build"


def tree_commit(src: Path) -> str | None:
    """The source tree's git commit, or the contents of a COMMIT file beside an exported tree."""
    marker = src / "COMMIT"
    if marker.is_file():
        return marker.read_text().strip() or None
    try:
        out = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def tree_digest(src: Path) -> str:
    """A content hash of a tree with no commit to name it: two different exports must not share one cached
    build (the key was once the word "unversioned" alone). Write ``git rev-parse HEAD`` into ``TREE/COMMIT``
    when exporting, so the raw rows record which solver ran."""
    digest = hashlib.sha256()
    for path in sorted(p for p in src.rglob("*") if p.is_file() and ".git" not in p.parts):
        digest.update(str(path.relative_to(src)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def build(name: str, src: str | None, target: str, binary: str) -> Solver:
    """cmake-build ``target`` of the tree at ``src`` into the cache; skip (with the reason) on any failure."""
    if not src:
        return Solver(name, None, None, f"no --{name}-src given")
    tree = Path(src).resolve()
    repo = Path(__file__).resolve().parent.parent
    if tree == repo or repo in tree.parents:
        return Solver(name, None, None, f"{tree} is inside this repository; point to a tree outside it")
    if not (tree / "CMakeLists.txt").is_file():
        return Solver(name, None, None, f"{tree} has no CMakeLists.txt (missing or not a source tree)")
    commit = tree_commit(tree)
    out = cache_root() / f"{name}-{commit[:12] if commit else 'unversioned-' + tree_digest(tree)}"
    exe = out / binary
    if exe.is_file():
        return Solver(name, exe, commit, None)
    if shutil.which("cmake") is None:
        return Solver(name, None, commit, "cmake not found")
    out.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    with log.open("w") as fh:
        for cmd in (
            ["cmake", "-S", str(tree), "-B", str(out), "-DCMAKE_BUILD_TYPE=Release"],
            ["cmake", "--build", str(out), "--target", target, "-j", "2"],
        ):
            rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode
            if rc != 0:
                tail = log.read_text().strip().splitlines()[-3:]
                return Solver(
                    name, None, commit, f"{' '.join(cmd[:2])} failed (rc {rc}): {' | '.join(tail)[:300]}"
                )
    if not exe.is_file():
        return Solver(name, None, commit, f"build finished but {exe} is missing")
    return Solver(name, exe, commit, None)


def _paths_lns2(text: str) -> list[list[XY]]:
    """``Agent i:(row,col)->(row,col)->...`` per line → (x, y) paths."""
    paths: list[list[XY]] = []
    for line in text.splitlines():
        if not line.startswith("Agent"):
            continue
        cells = re.findall(r"\((\d+),(\d+)\)", line.split(":", 1)[1])
        paths.append([(int(c), int(r)) for r, c in cells])
    return paths


def _paths_lacam3(text: str) -> list[list[XY]]:
    """``solution=`` then one line per time step ``t:(x,y),(x,y),...`` → per-robot (x, y) paths."""
    marker = "\nsolution=\n"  # not "comp_time_initial_solution=" or "cost_initial_solution="
    lines = text.split(marker, 1)[1].strip().splitlines() if marker in text else []
    steps = [
        [(int(x), int(y)) for x, y in re.findall(r"\((\d+),(\d+)\)", ln.split(":", 1)[1])]
        for ln in lines
        if re.match(r"^\d+:", ln)
    ]
    if not steps:
        return []
    return [[step[i] for step in steps] for i in range(len(steps[0]))]


def run_external(
    solver: Solver, map_file: Path, scen_file: Path, k: int, limit: float, seed: int
) -> dict[str, Any]:
    assert solver.binary is not None
    with tempfile.TemporaryDirectory(prefix=f"sota-{solver.name}-") as tmp:
        out = Path(tmp) / "paths.txt"
        if solver.name == "lns2":
            cmd = [
                str(solver.binary),
                "-m",
                str(map_file),
                "-a",
                str(scen_file),
                "-k",
                str(k),
                "-t",
                str(limit),
                "-o",
                str(Path(tmp) / "stats"),
                "--outputPaths",
                str(out),
                "--seed",
                str(seed),
                "-s",
                "0",
                "--maxIterations",
                "1000000000",
            ]  # 0 (the default) stops after the first solution
            parse = _paths_lns2
        else:
            cmd = [
                str(solver.binary),
                "-m",
                str(map_file),
                "-i",
                str(scen_file),
                "-N",
                str(k),
                "-t",
                str(limit),
                "-o",
                str(out),
                "-s",
                str(seed),
                "--no-multi-thread",
                "-v",
                "0",
            ]
            parse = _paths_lacam3
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 60)
        except subprocess.TimeoutExpired:
            return {"error": f"no answer within {limit + 60:.0f} s", "seconds": time.monotonic() - t0}
        seconds = time.monotonic() - t0
        if not out.is_file():
            return {
                "error": f"no paths written (rc {proc.returncode}): {proc.stderr.strip()[-200:]}",
                "seconds": seconds,
            }
        return {"paths": parse(out.read_text()), "seconds": seconds}


SERVICE_TEAMS: dict[str, list[str]] = {
    "rounds": ["--mode", "rounds"],
    "async": ["--mode", "async"],
    "async-stalled": ["--mode", "async", "--regroup-after", "stalled"],
    "hold": ["--mode", "rounds", "--selection", "ucb1", "--hold"],
}
"""``blockopt run`` options of each service team."""


def run_service_team(
    map_name: str,
    scen: str,
    k: int,
    agents: int,
    blocks: int,
    limit: float,
    seed: int,
    mode: str,
    no_stall: bool = False,
) -> dict[str, Any]:
    """``blockopt run routing`` through the embedded coordinator, one worker process per agent; the paths
    come from the report's solution. ``limit`` runs from the request that creates the task (its first
    plan included); ``seconds`` is the whole command (task creation and the report's pictures included)."""
    with tempfile.TemporaryDirectory(prefix="sota-blockopt-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [
            sys.executable, "-m", "blockopt", "run", "routing", "--map", map_name, "--scen", scen,
            "--robots", str(k), "--blocks", str(blocks), "--agents", str(agents),
            "--processes", str(agents), "--time-limit", str(limit), "--seed", str(seed),
            *SERVICE_TEAMS[mode],
            "--quiet", "--report", str(report), *(["--stall-seconds", str(limit)] if no_stall else []),
        ]  # fmt: skip
        env = tree_env(Path(__file__).resolve().parent.parent, MPLBACKEND="Agg")
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 300, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"no answer within {limit + 300:.0f} s", "seconds": time.monotonic() - t0}
        seconds = time.monotonic() - t0
        if proc.returncode != 0 or not report.is_file():
            return {"error": f"blockopt run failed (rc {proc.returncode}): {proc.stderr.strip()[-300:]}",
                    "seconds": seconds}  # fmt: skip
        data = json.loads(report.read_text())
    paths = [[(int(x), int(y)) for x, y in p] for p in data["solution"]["paths"]]
    received = {k: data["proposals"][k] for k in ("received", "accepted", "rejected", "rejected_by_reason")}
    return {
        "paths": paths,
        "seconds": seconds,
        "rounds": data["rounds"],
        "run_wall_s": data["wall_s"],
        "proposals": received,
    }


def _row(task: RoutingTask, solver: str, raw: dict[str, Any]) -> dict[str, Any]:
    lb = task.lower_bound()
    row: dict[str, Any] = {"solver": solver, "seconds": round(raw["seconds"], 2), "lower_bound": lb}
    if "error" in raw:
        row.update(valid=False, error=raw["error"])
        return row
    paths = raw["paths"]
    if len(paths) != len(task.inst.starts):
        row.update(valid=False, error=f"{len(paths)} paths for {len(task.inst.starts)} robots")
        return row
    v = check(task, paths)
    row.update(
        valid=v.valid, soc=v.soc, ratio=round(v.soc / lb, 4), conflicts=v.conflicts, errors=v.errors[:3]
    )
    return row


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="mapf_sota", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lns2-src", help="MAPF-LNS2 source tree (github.com/Jiaoyang-Li/MAPF-LNS2)")
    ap.add_argument(
        "--lacam3-src", help="LaCAM3 source tree with third_party/argparse (github.com/Kei18/lacam3)"
    )
    ap.add_argument("--limit", type=float, default=30.0, help="wall-clock seconds per solver and instance")
    ap.add_argument(
        "--agents", type=int, nargs="+", default=[3], help="team sizes (one column of ours per size and team)"
    )
    ap.add_argument(
        "--blocks",
        type=int,
        default=None,
        help="blocks of a service team (default: async: the product's default; else 2x agents)",
    )
    ap.add_argument(
        "--teams",
        nargs="*",
        choices=("inproc", "rounds", "async", "async-stalled", "hold"),
        default=["inproc"],
        help="how our team runs: in-process on one core (inproc), or `blockopt run` with a worker process"
        " per agent, in rounds mode, merging on arrival (async: blocks nobody holds regrouped after every"
        " arrival; async-stalled: only after an empty round) or in rounds with --selection ucb1 --hold;"
        " none (--teams alone): only the reference solvers, e.g. for more of their seeds",
    )
    ap.add_argument(
        "--seed",
        type=int,
        default=0,
        help="ours and the reference solvers' (MAPF-LNS2 passes it to srand(): seeds 0 and 1 are one run)",
    )
    ap.add_argument(
        "--no-stall",
        action="store_true",
        help="our team runs to the time limit, as the other solvers do (default: the product's stall rule,"
        " which ends a run after 3 rounds without a merge)",
    )
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(f'{m} k={k}' for m, k in QUICK)}")
    ap.add_argument("--only", nargs="*", metavar="MAP:K", help="instances to run, e.g. room-32-32-4:50")
    ap.add_argument("--json", default=None, help="write the raw rows here")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="a call per seed and instance (--dir)")
    ap.add_argument("--refs", nargs="+", default=None, help="our team from each git ref's tree (--dir)")
    ap.add_argument("--dir", type=Path, default=None, help="one raw JSON per call of --seeds or --refs here")
    ap.add_argument(
        "--table-from", default=None, metavar="JSON", help="only print the table of an earlier run's rows"
    )
    args = ap.parse_args(argv)
    if (args.seeds or args.refs) and args.dir is None:
        fail("mapf_sota", "--seeds and --refs want --dir (one raw JSON per call goes there)")
    if args.dir is not None and not (args.seeds or args.refs):
        fail("mapf_sota", "--dir goes with --seeds or --refs")
    if args.limit <= 0 or min(args.agents) < 1:
        fail("mapf_sota", "--limit and --agents want positive numbers")
    if args.table_from:
        saved = json.loads(Path(args.table_from).read_text())
        meta = saved["meta"]
        sizes = meta["agents"] if isinstance(meta["agents"], list) else [meta["agents"]]
        _table(saved["rows"], [*meta["solvers"], *_team_names(sizes, meta.get("teams", ["inproc"]))])
        return 0

    cases = QUICK if args.quick else FULL
    if args.only:
        cases = [(m, int(k)) for m, k in instances(args.only, "mapf_sota")]
    if args.refs:
        return side_by_side(args, argv or sys.argv[1:], cases)
    if args.seeds:
        for seed in args.seeds:
            for map_name, k in cases:
                args.seed, args.json = seed, str(args.dir / f"{map_name}-{k}-s{seed}.json")
                run(args, [(map_name, k)])
        return 0
    run(args, cases)
    return 0


def run(args: argparse.Namespace, cases: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """Every solver and team of ours on ``cases``; the rows, also written to ``--json``."""
    solvers = [build("lns2", args.lns2_src, "lns", "lns"), build("lacam3", args.lacam3_src, "main", "main")]
    for s in solvers:
        print(
            f"{s.name}: "
            + (f"built {s.binary} (commit {s.commit})" if s.skipped is None else f"SKIPPED: {s.skipped}"),
            flush=True,
        )
    rows: list[dict[str, Any]] = []
    for map_name, k in cases:
        scen = f"{map_name}-random-1"
        task = make_task(map_name, scen, k, 2)  # (the validator's: its blocks do not matter)
        map_file, scen_file = movingai.resolve_map(map_name), movingai.resolve_scen(scen, map_name)
        inst = f"{map_name} k={k}"
        for s in solvers:
            if s.skipped is not None:
                rows.append({"instance": inst, "solver": s.name, "skipped": s.skipped})
                continue
            row = _row(task, s.name, run_external(s, map_file, scen_file, k, args.limit, args.seed))
            row.update(instance=inst, commit=s.commit)
            rows.append(row)
            print(json.dumps(row), flush=True)
        for agents, team_kind in [(a, t) for a in args.agents for t in args.teams]:
            name = _team_name(agents, team_kind)
            if team_kind != "inproc":
                # the service's clock starts when the task is asked for, so its first plan counts against
                # the limit as LNS2's and the in-process team's do
                blocks = args.blocks or (
                    RoutingTask.team_defaults(agents, "async")["blocks"]
                    if team_kind.startswith("async")
                    else agents * 2
                )
                raw = run_service_team(
                    map_name, scen, k, agents, blocks, args.limit, args.seed, team_kind, args.no_stall
                )
                raw["blocks"] = blocks
                ours = {**_row(task, name, raw), "instance": inst}
                keys = ("blocks", "rounds", "run_wall_s", "proposals")
                ours.update({key: raw[key] for key in keys if key in raw})
                rows.append(ours)
                print(json.dumps(ours), flush=True)
                continue
            stall = 1_000_000_000 if args.no_stall else None
            team = run_team(task, agents, time_limit=args.limit, seed=args.seed, stall_rounds=stall)
            ours = {
                "instance": inst,
                "solver": name,
                "seconds": round(team.seconds, 2),
                "lower_bound": team.lower_bound,
                "valid": team.feasible,
                "soc": team.soc,
                "ratio": round(team.soc / team.lower_bound, 4),
                "rounds": team.rounds,
                "conflicts": team.verdict.conflicts if team.verdict else None,
                "first_feasible_s": team.first_feasible_s,
            }
            rows.append(ours)
            print(json.dumps(ours), flush=True)
    _table(rows, [s.name for s in solvers] + _team_names(args.agents, args.teams))
    if args.json:
        meta = {
            "limit": args.limit,
            "agents": args.agents,
            "teams": args.teams,
            "no_stall": args.no_stall,
            "seed": args.seed,
            "solvers": {s.name: {"commit": s.commit, "skipped": s.skipped} for s in solvers},
            "cpus": os.cpu_count(),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        print(f"wrote {write_json(args.json, {'meta': meta, 'rows': rows})}")
    return rows


def side_by_side(args: argparse.Namespace, argv: list[str], cases: list[tuple[str, int]]) -> int:
    """``--refs``: our team from each ref's tree, refs rotating per seed and instance; no reference solver."""
    keep = _passed_through(argv)
    with exported(args.refs, "mapf_sota") as trees:
        for ref, tree in trees.items():  # warm-up: SIPP compiles into the tree's cache
            _in_tree(tree, ["--limit", "2", "--agents", str(args.agents[0]), "--teams", "async",
                            "--only", "empty-16-16:20"])  # fmt: skip
            print(f"{ref} exported and warmed up {time.strftime('%H:%M:%S')}", flush=True)
        turn = 0
        for seed in args.seeds or [args.seed]:
            for map_name, k in cases:
                order = args.refs[turn % len(args.refs) :] + args.refs[: turn % len(args.refs)]
                turn += 1
                for ref in order:
                    out = args.dir / f"{ref.replace('/', '_')}-{map_name}-{k}-s{seed}.json"
                    out.parent.mkdir(parents=True, exist_ok=True)
                    _in_tree(trees[ref], [*keep, "--seed", str(seed), "--only", f"{map_name}:{k}",
                                          "--json", str(out.resolve())])  # fmt: skip
                    socs = [r.get("soc") for r in json.loads(out.read_text())["rows"] if "skipped" not in r]
                    when, load = time.strftime("%H:%M:%S"), os.getloadavg()[0]
                    print(f"{ref} {map_name} k={k} s{seed} soc {socs} {when} load {load:.1f}", flush=True)
    return 0


def _passed_through(argv: list[str]) -> list[str]:
    """The options a ref's own run takes from this command: the team's, not the seeds, refs or paths."""
    drop = {
        "--refs",
        "--seeds",
        "--dir",
        "--only",
        "--json",
        "--seed",
        "--lns2-src",
        "--lacam3-src",
        "--quick",
    }
    out: list[str] = []
    skipping = False
    for arg in argv:
        if arg.startswith("--"):
            skipping = arg.split("=")[0] in drop
        if not skipping:
            out.append(arg)
    return out


def _in_tree(tree: str, args: list[str]) -> None:
    """This benchmark as ``tree`` has it, run from that tree (its own code end to end)."""
    cmd = [sys.executable, "-m", "benchmarks.mapf_sota", *args]
    subprocess.run(cmd, cwd=tree, env=tree_env(tree), check=True, capture_output=True)


def _team_names(sizes: list[int], teams: list[str]) -> list[str]:
    return [_team_name(a, t) for a in sizes for t in teams]


def _team_name(agents: int, team: str) -> str:
    """``blockopt-3`` for the in-process team (the name earlier rows carry), ``blockopt-3-async`` etc."""
    return f"blockopt-{agents}" if team == "inproc" else f"blockopt-{agents}-{team}"


def _table(rows: list[dict[str, Any]], names: list[str]) -> None:
    """SOC/LB per instance and solver ('x' = not collision-free, '-' = skipped), and ours over LNS2's SOC
    (one column per team of ours: the solvers after the first two)."""
    ours_names = [n for n in names if n.startswith("blockopt-")]
    columns = ["instance", *names, *(f"{n} / LNS2 SOC" for n in ours_names)]
    print("\n| " + " | ".join(columns) + " |")
    print("|---|" + "---|" * (len(columns) - 1))
    for inst in dict.fromkeys(r["instance"] for r in rows):
        by = {r["solver"]: r for r in rows if r["instance"] == inst}
        cells = []
        for n in names:
            r = by.get(n)
            if r is None or "skipped" in r:
                cells.append("-")
            elif not r.get("valid"):
                cells.append(f"x ({r.get('conflicts', r.get('error', '?'))})")
            else:
                cells.append(f"{r['ratio']:.4f}")
        lns = by.get("lns2")
        vs = []
        for n in ours_names:
            ours = by.get(n)
            ok = lns and ours and lns.get("valid") and ours.get("valid")
            vs.append(f"{ours['soc'] / lns['soc']:.4f}" if ok else "-")  # type: ignore[index]
        print("| " + " | ".join([inst, *cells, *vs]) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
