"""Scale curves: how the coordinator's costs grow along each axis (issue 13; not a test).

Engine axes run the round engine in-process with the kinds' own proposers (``run_inproc``), each point in a
fresh subprocess so its peak RSS is its own:

- ``quad-blocks``: quadratic, blocks 16 → 1,024 at fixed sparse coupling (``neighbours`` 4), one agent per
  block, so proposals per round grow with the blocks;
- ``quad-agents``: quadratic with 256 sparse blocks, agents 4 → 256;
- ``routing``: robots 50 → 400 on random-32-32-10 and warehouse-10-20-10-2-1 (scenario random-1), 6 agents;
- ``sqlplan``: TPC-H scale factor 0.01 → 0.1, 4 agents (full mode only: its first round alone takes ~1 min).

Service axes run ``blockopt serve`` (one process, memory store) under simulated quadratic agents
(``service_throughput.agent_loop``: lease → submit → verdict, the real HTTP protocol):

- ``svc-tasks``: 1 → 50 concurrent quadratic-16 tasks with 4 agents each;
- ``svc-agents``: 16 → 512 agents on one sparse quadratic-512 task.

Per point: time per round (coordinator side: engine + objective evaluations; wall for the whole round),
coordinator CPU per proposal, peak RSS, time to the first feasible and to the final answer. The summary
prints the fitted log-log slope per axis and metric (1.0 = linear in the input).

    .venv/bin/python -m benchmarks.scale --quick            # < 5 min
    .venv/bin/python -m benchmarks.scale --label before     # full; writes benchmarks/results/scale-before.json
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.lib.cli import Parser

ROOT = Path(__file__).resolve().parent.parent

QUICK: dict[str, list[dict[str, Any]]] = {
    "quad-blocks": [{"blocks": n, "rounds": 4} for n in (16, 64, 256)],
    "quad-agents": [{"blocks": 256, "agents": a, "rounds": 4} for a in (4, 32, 256)],
    "routing": [{"map": "random-32-32-10", "robots": r, "time_limit": 8} for r in (50, 100)],
    "svc-tasks": [{"tasks": k, "seconds": 6} for k in (1, 5)],
    "svc-agents": [{"agents": a, "seconds": 6} for a in (16, 64)],
}
FULL: dict[str, list[dict[str, Any]]] = {
    "quad-blocks": [{"blocks": n, "rounds": 6} for n in (16, 64, 256, 1024)],
    "quad-agents": [{"blocks": 256, "agents": a, "rounds": 6} for a in (4, 16, 64, 256)],
    "routing": [
        {"map": m, "robots": r, "time_limit": 60}
        for m in ("random-32-32-10", "warehouse-10-20-10-2-1")
        for r in (50, 100, 200, 400)
    ],
    "sqlplan": [{"scale": s, "time_limit": 120} for s in (0.01, 0.03, 0.1)],
    "svc-tasks": [{"tasks": k, "seconds": 10} for k in (1, 5, 10, 25, 50)],
    "svc-agents": [{"agents": a, "seconds": 10} for a in (16, 64, 256, 512)],
}
INPUT = {
    "quad-blocks": "blocks",
    "quad-agents": "agents",
    "routing": "robots",
    "sqlplan": "scale",
    "svc-tasks": "tasks",
    "svc-agents": "agents",
}
NEIGHBOURS = 4


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- engine points (run in a child process) --------------------------------------------------------------
def engine_point(axis: str, spec: dict[str, Any]) -> dict[str, Any]:
    from coordinator.engine.rounds import EngineSettings
    from coordinator.reports.ledger import StopRule
    from coordinator.runtime.inproc import RunSettings, run_inproc
    from tasks.registry import create_task

    t0 = time.perf_counter()
    if axis.startswith("quad"):
        task = create_task(
            "quadratic",
            {"blocks": spec["blocks"], "dim": 4, "coupling": 0.3, "neighbours": NEIGHBOURS, "seed": 1},
        )
        knobs = task.ProposerParams()
        agents = spec.get("agents", spec["blocks"])
        settings = RunSettings(
            agents=agents, max_rounds=spec["rounds"], stop=StopRule(relative_gap=0.0, stall_rounds=1_000_000)
        )
    elif axis == "routing":
        task = create_task(
            "routing",
            {"map": spec["map"], "scen": f"{spec['map']}-random-1", "robots": spec["robots"], "blocks": 6},
        )
        knobs = task.ProposerParams()
        settings = RunSettings(agents=6, max_rounds=100_000, time_limit=spec["time_limit"])
    else:
        task = create_task("sqlplan", {"scale": spec["scale"], "blocks": 4, "baselines": False})
        knobs = task.ProposerParams(proposal_seconds=5.0)
        settings = RunSettings(agents=4, max_rounds=100_000, time_limit=spec["time_limit"])
    setup_s = time.perf_counter() - t0
    first: dict[str, float] = {}
    started = time.perf_counter()

    def on_round(outcome: Any, ledger: Any) -> None:
        if "s" not in first and task.feasible(outcome.snapshot.state):
            first["s"] = time.perf_counter() - started

    result = run_inproc(task, knobs, settings, EngineSettings(merge_policy="checked"), on_round=on_round)
    wall = time.perf_counter() - started
    recs = result.ledger.records
    busy = [r for r in recs if r.proposals > 0] or recs
    proposals = sum(r.proposals for r in recs)
    coord = sum(r.engine_seconds + r.eval_seconds for r in recs)
    ref = result.engine.reference.value
    return {
        "setup_s": setup_s,
        "rounds": len(recs),
        "status": result.status,
        "wall_s": wall,
        "round_wall_ms": 1000 * wall / max(1, len(recs)),
        "engine_ms": 1000 * statistics.median(r.engine_seconds for r in busy),
        "eval_ms": 1000 * statistics.median(r.eval_seconds for r in busy),
        "coordinator_ms": 1000 * statistics.median(r.engine_seconds + r.eval_seconds for r in busy),
        "proposals_per_round": statistics.median(r.proposals for r in busy),
        "coordinator_us_per_proposal": 1e6 * coord / max(1, proposals),
        "peak_rss_mb": peak_rss_mb(),
        "first_feasible_s": first.get("s"),
        "final_s": wall,
        "rel_gap": (result.snapshot.objective - ref) / max(1.0, abs(ref)),
        "feasible": bool(task.feasible(result.snapshot.state)),
    }


# -- service points --------------------------------------------------------------------------------------
def _gen(
    port: int, tasks: list[dict[str, str]], agents: list[int], start: float, seconds: float, queue: Any
) -> None:
    from benchmarks.service_throughput import agent_loop

    while time.time() < start:
        time.sleep(0.005)
    deadline = time.monotonic() + seconds
    results: list[dict[str, Any]] = [{} for _ in agents]
    threads = [
        threading.Thread(
            target=agent_loop, args=(port, tasks[a % len(tasks)], deadline, results[k], 5.0, True)
        )
        for k, a in enumerate(agents)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ru = os.times()
    queue.put(
        {
            "submit": [x for r in results for x in r.get("submit", [])],
            "proposals": sum(r.get("proposals", 0) for r in results),
            "cpu": ru.user + ru.system,
        }
    )


def _rss_peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


STACK: list[str] = []
"""Extra ``blockopt serve`` options naming the HTTP stack (``--stack``); empty: the server's default."""


def service_point(axis: str, spec: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.service_throughput import ADMIN, Conn, cpu_seconds, free_port, start_serve, stop

    port = free_port()
    serve = start_serve(port, *STACK)
    try:
        if axis == "svc-tasks":
            n_tasks, n_agents, params = (
                spec["tasks"],
                4 * spec["tasks"],
                {"blocks": 16, "dim": 4, "coupling": 0.3},
            )
        else:
            n_tasks, n_agents = 1, spec["agents"]
            params = {"blocks": 512, "dim": 4, "coupling": 0.3, "neighbours": NEIGHBOURS}
        admin = Conn(port, ADMIN)
        t_create = time.perf_counter()
        tasks = []
        for _ in range(n_tasks):
            status, created = admin.call(
                "POST",
                "/v1/tasks",
                {
                    "kind": "quadratic",
                    "params": params,
                    "merge_policy": "checked",
                    "budgets": {"rounds": 1_000_000},
                    "stop": {"relative_gap": 0.0, "stall_rounds": 1_000_000},
                },
            )
            assert status == 201, created
            tasks.append(created)
        create_s = time.perf_counter() - t_create
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        begin = time.time() + 2.0 + n_agents / 200
        procs = 2
        children = [
            ctx.Process(
                target=_gen,
                args=(port, tasks, list(range(p, n_agents, procs)), begin, spec["seconds"], queue),
            )
            for p in range(procs)
        ]
        for ch in children:
            ch.start()
        while time.time() < begin:
            time.sleep(0.005)
        cpu0, t0 = cpu_seconds(serve.pid), time.monotonic()
        parts = [queue.get(timeout=spec["seconds"] + 300) for _ in children]
        wall, cpu1 = time.monotonic() - t0, cpu_seconds(serve.pid)
        for ch in children:
            ch.join()
        rounds = []
        admin = Conn(port, ADMIN)  # the first connection idled past the server's keep-alive
        for t in tasks:
            _, view = admin.call("GET", f"/v1/tasks/{t['id']}")
            rounds.append(view["round"])
        lat = sorted(x for p in parts for x in p["submit"])
        proposals = sum(p["proposals"] for p in parts)
        return {
            "tasks": n_tasks,
            "agents": n_agents,
            "create_s": create_s,
            "proposals": proposals,
            "proposals_per_s": proposals / wall,
            "server_cpu_s": cpu1 - cpu0,
            "coordinator_us_per_proposal": 1e6 * (cpu1 - cpu0) / max(1, proposals),
            "round_wall_ms": 1000 * wall * n_tasks / max(1, sum(rounds)),
            "submit_p50_ms": 1000 * lat[len(lat) // 2] if lat else None,
            "submit_p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
            "peak_rss_mb": _rss_peak_mb(serve.pid),
            "gen_cpu_s": sum(p["cpu"] for p in parts),
        }
    finally:
        stop(serve)


# -- driver ------------------------------------------------------------------------------------------------
def run_point(axis: str, spec: dict[str, Any]) -> dict[str, Any]:
    if axis.startswith("svc"):
        return service_point(axis, spec)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--point", json.dumps({"axis": axis, **spec})],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        return {
            "error": done.stderr.strip().splitlines()[-1]
            if done.stderr.strip()
            else f"exit {done.returncode}"
        }
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def slope(xs: list[float], ys: list[float]) -> float | None:
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x and y and x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


METRICS = [
    "coordinator_ms",
    "engine_ms",
    "eval_ms",
    "round_wall_ms",
    "coordinator_us_per_proposal",
    "peak_rss_mb",
    "setup_s",
    "first_feasible_s",
    "final_s",
    "proposals_per_s",
    "submit_p99_ms",
    "proposals_per_round",
]


def series(points: list[dict[str, Any]], axis: str) -> dict[str, list[dict[str, Any]]]:
    """Points grouped into curves (routing: one curve per map)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for p in points:
        out.setdefault(f"{axis}:{p['spec']['map']}" if axis == "routing" else axis, []).append(p)
    return out


def summary(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = []
    for axis, points in results.items():
        for name, pts in series(points, axis).items():
            xs = [p["spec"].get(INPUT[axis], p["result"].get(INPUT[axis])) for p in pts]
            head = f"{name} ({INPUT[axis]} {', '.join(f'{x:g}' for x in xs)})"
            lines.append(head)
            for m in METRICS:
                ys = [p["result"].get(m) for p in pts]
                if all(y is None for y in ys):
                    continue
                s = slope(xs, ys)  # type: ignore[arg-type]
                cells = "  ".join("-" if y is None else f"{y:.4g}" for y in ys)
                lines.append(f"  {m:28s} {cells:60s} slope {'-' if s is None else f'{s:.2f}'}")
            errs = [p["result"]["error"] for p in pts if "error" in p["result"]]
            for e in errs:
                lines.append(f"  error: {e}")
    return lines


def plot(results: dict[str, list[dict[str, Any]]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for axis, points in results.items():
        metrics = ["coordinator_ms", "coordinator_us_per_proposal", "peak_rss_mb", "final_s"]
        if axis.startswith("svc"):
            metrics = ["proposals_per_s", "coordinator_us_per_proposal", "peak_rss_mb", "submit_p99_ms"]
        fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.4))
        for ax, m in zip(axes, metrics, strict=True):
            for name, pts in series(points, axis).items():
                xy = [
                    (p["spec"].get(INPUT[axis], p["result"].get(INPUT[axis])), p["result"].get(m))
                    for p in pts
                ]
                xy = [(x, y) for x, y in xy if y]
                if xy:
                    ax.loglog(*zip(*xy, strict=True), "o-", label=name)
            ax.set_xlabel(INPUT[axis])
            ax.set_title(m, fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.suptitle(f"{axis} ({out.stem})")
        fig.tight_layout()
        fig.savefig(out.parent / f"{out.stem}-{axis}.png", dpi=80)
        plt.close(fig)


def compare(labels: list[str]) -> None:
    """One log-log figure per axis with the curves of several saved runs (e.g. before and after)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def load(label: str) -> dict[str, Any]:  # "a+b": the axes of both saved runs
        merged: dict[str, Any] = {}
        for part in label.split("+"):
            merged.update(
                json.loads((ROOT / "benchmarks" / "results" / f"scale-{part}.json").read_text())["results"]
            )
        return merged

    runs = {lb: load(lb) for lb in labels}
    axes = sorted({a for r in runs.values() for a in r})
    for axis in axes:
        metrics = (
            ["proposals_per_s", "coordinator_us_per_proposal", "submit_p99_ms"]
            if axis.startswith("svc")
            else ["coordinator_ms", "coordinator_us_per_proposal", "peak_rss_mb"]
        )
        fig, panels = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.4))
        for ax, m in zip(panels, metrics, strict=True):
            for lb, res in runs.items():
                for name, pts in series(res.get(axis, []), axis).items():
                    xy = [(p["spec"].get(INPUT[axis]), p["result"].get(m)) for p in pts]
                    xy = [(x, y) for x, y in xy if y]
                    if xy:
                        ax.loglog(*zip(*xy, strict=True), "o-", label=f"{lb} {name}")
            ax.set_xlabel(INPUT[axis])
            ax.set_title(m, fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
        panels[0].legend(fontsize=7)
        fig.suptitle(f"{axis}: {' vs '.join(labels)}")
        fig.tight_layout()
        out = ROOT / "benchmarks" / "results" / f"scale-compare-{axis}.png"
        fig.savefig(out, dpi=80)
        plt.close(fig)
        print(f"wrote {out.relative_to(ROOT)}")


def main() -> None:
    ap = Parser(prog="scale", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small points only (< 5 min)")
    ap.add_argument(
        "--axes", default=None, help=f"comma-separated subset of {','.join(FULL)} (default: all of the mode)"
    )
    ap.add_argument("--label", default=None, help="result name (default: quick or full)")
    ap.add_argument(
        "--stack",
        choices=["default", "h11", "httptools"],
        default="default",
        help="service axes: h11 = --http h11 --loop asyncio; httptools = --http httptools --loop uvloop",
    )
    ap.add_argument(
        "--compare",
        metavar="LABEL,LABEL",
        help="only draw saved runs' curves together (no measuring); "
        "LABEL may join runs with + (after+after-svc)",
    )
    ap.add_argument("--point", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.compare:
        compare(args.compare.split(","))
        return
    if args.stack != "default":
        STACK.extend(["--http", args.stack, "--loop", "asyncio" if args.stack == "h11" else "uvloop"])
    if args.point:
        spec = json.loads(args.point)
        print(json.dumps(engine_point(spec.pop("axis"), spec)))
        return
    plan = QUICK if args.quick else FULL
    axes = [a for a in (args.axes or ",".join(plan)).split(",") if a]
    unknown = [a for a in axes if a not in FULL]
    if unknown:
        ap.error(f"unknown axis {unknown[0]!r}; choose from {', '.join(FULL)}")
    skipped = [a for a in axes if a not in plan]
    if skipped:
        print(
            f"--quick has no {', '.join(skipped)} points (sqlplan's first round alone takes about a minute)"
        )
    axes = [a for a in axes if a in plan]
    label = args.label or ("quick" if args.quick else "full")
    out = ROOT / "benchmarks" / "results" / f"scale-{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {}
    t0 = time.monotonic()
    print(
        f"scale curves ({label}), {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start "
        "(shared machine: figures are from a loaded host)",
        flush=True,
    )
    for axis in axes:
        for spec in plan[axis]:
            t = time.monotonic()
            res = run_point(axis, spec)
            results.setdefault(axis, []).append({"spec": spec, "result": res})
            brief = {
                k: (round(v, 4) if isinstance(v, float) else v)
                for k, v in res.items()
                if k
                in (
                    "coordinator_ms",
                    "coordinator_us_per_proposal",
                    "peak_rss_mb",
                    "proposals_per_s",
                    "rounds",
                    "first_feasible_s",
                    "status",
                    "error",
                    "proposals_per_round",
                )
            }
            print(f"  {axis} {spec}: {time.monotonic() - t:.1f}s {brief}", flush=True)
    doc = {
        "label": label,
        "quick": args.quick,
        "stack": args.stack,
        "cores": os.cpu_count(),
        "load_avg_start": os.getloadavg()[0],
        "wall_s": time.monotonic() - t0,
        "results": results,
    }
    out.write_text(json.dumps(doc, indent=1))
    print("\n".join(summary(results)))
    plot(results, out)
    print(f"wrote {out.relative_to(ROOT)} and its PNGs ({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
