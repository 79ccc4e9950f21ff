"""The split mode under load (issue 13 targets; not a test). Three parts, each side by side in one run:

- ``ratio``: 64 agents on quadratic-64 (`/next` protocol: one request per proposal). The trivial FastAPI
  endpoint with K uvicorn worker processes against the coordinator with K server processes: the in-process
  mode (K API processes each running rounds, Redis store) and the split mode (API + engine processes
  adding up to K, Redis store). Counted: processes that serve requests or run rounds. Not counted on
  either side: the idle supervisor parent (uvicorn's for ``--workers``, ``blockopt serve``'s), the load
  generator, and Redis (the coordinator's shared store; its CPU is reported beside the server's).
- ``scaleout``: proposals/s with 1, 2 and 4 engine processes (2 API processes) across 8 concurrent tasks.
- ``tasks50``: 50 concurrent quadratic tasks with 4 agents each on one split coordinator (1 API + 1 engine):
  every task must converge; submit latency (the `POST /proposals?wait=5` call, verdict inline) p50 / p99.

    .venv/bin/python -m benchmarks.service_split [--parts ratio,scaleout,tasks50] [--repeats 3]
        [--seconds 12] [--json benchmarks/results/service_split.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.lib.cli import Parser
from benchmarks.service_throughput import (
    ADMIN,
    Conn,
    agent_loop,
    cpu_seconds,
    free_port,
    start_serve,
    start_trivial,
    stop,
)

ROOT = Path(__file__).resolve().parent.parent

REDIS = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
WARMUP = 6.0
"""Seconds of load before each measured coordinator case."""
LEASE_TTL = 4.0
"""The coordinators' lease TTL here: the warm-up's agents stop holding leases, which must lapse first."""


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()]
        except OSError:
            pass
    return out


def tree_cpu(pid: int) -> float:
    total = 0.0
    for p in tree(pid):
        try:
            total += cpu_seconds(p)
        except OSError:
            pass
    return total


def redis_pid() -> int | None:
    import redis

    try:
        with redis.Redis.from_url(REDIS) as r:
            return int(r.info("server")["process_id"])
    except Exception:
        return None


def purge(prefix: str) -> None:
    import redis

    with redis.Redis.from_url(REDIS) as r:
        keys = list(r.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            r.delete(*keys)


def gen_process(
    port: int, tasks: list[dict[str, str]], agents: int, first: int, start: float, seconds: float, q: Any
) -> None:
    while time.time() < start:
        time.sleep(0.005)
    deadline = time.monotonic() + seconds
    results: list[dict[str, Any]] = [{} for _ in range(agents)]
    threads = [
        threading.Thread(
            target=agent_loop,
            args=(port, tasks[(first + i) % len(tasks)], deadline, results[i], 5.0, True),
        )
        for i in range(agents)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.put(
        {
            "submit": [x for r in results for x in r.get("submit", [])],
            "requests": sum(r.get("requests", 0) for r in results),
            "proposals": sum(r.get("proposals", 0) for r in results),
            "stopped": [r["stopped"] for r in results if "stopped" in r],
            "unavailable": sum(r.get("unavailable", 0) for r in results),
        }
    )


def trivial_process(port: int, agents: int, start: float, seconds: float, q: Any) -> None:
    from benchmarks.service_throughput import trivial_loop

    while time.time() < start:
        time.sleep(0.005)
    deadline = time.monotonic() + seconds
    results: list[dict[str, Any]] = [{} for _ in range(agents)]
    threads = [
        threading.Thread(target=trivial_loop, args=(port, deadline, results[i])) for i in range(agents)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.put(
        {
            "submit": [x for r in results for x in r["submit"]],
            "requests": sum(r["requests"] for r in results),
            "proposals": sum(r["proposals"] for r in results),
        }
    )


def drive(
    port: int,
    server_pid: int,
    agents: int,
    seconds: float,
    tasks: list[dict[str, str]] | None,
    procs: int = 2,
) -> dict[str, Any]:
    """Run the agents (or the trivial loop when ``tasks`` is None) for ``seconds``; rates and CPU."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    start = time.time() + 2.0
    per = [agents // procs + (1 if i < agents % procs else 0) for i in range(procs)]
    firsts = [sum(per[:i]) for i in range(procs)]
    children = [
        ctx.Process(target=trivial_process, args=(port, n, start, seconds, q))
        if tasks is None
        else ctx.Process(target=gen_process, args=(port, tasks, n, f, start, seconds, q))
        for n, f in zip(per, firsts, strict=True)
    ]
    for ch in children:
        ch.start()
    while time.time() < start:
        time.sleep(0.005)
    rpid = redis_pid() if tasks is not None else None
    cpu0, r0 = tree_cpu(server_pid), (cpu_seconds(rpid) if rpid else 0.0)
    t0 = time.monotonic()
    parts = [q.get(timeout=seconds + 180) for _ in children]
    wall = time.monotonic() - t0
    cpu1, r1 = tree_cpu(server_pid), (cpu_seconds(rpid) if rpid else 0.0)
    for ch in children:
        ch.join()
    lat = sorted(x for p in parts for x in p["submit"])
    proposals = sum(p["proposals"] for p in parts)
    requests = sum(p["requests"] for p in parts)
    return {
        "proposals_per_s": proposals / wall,
        "requests_per_s": requests / wall,
        "p50_ms": 1000 * lat[len(lat) // 2] if lat else None,
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
        "server_cpu_s": cpu1 - cpu0,
        "redis_cpu_s": r1 - r0,
        "wall_s": wall,
        "proposals": proposals,
        "requests": requests,
        "agents_stopped_by": dict(Counter(x for p in parts for x in p.get("stopped", []))),
        "leases_answered_503": sum(p.get("unavailable", 0) for p in parts),
    }


def warm_up(port: int, pid: int, agents: int, tasks: list[dict[str, str]]) -> None:
    """Load, not measured, so every process builds each task once (quadratic-64: ~0.5 CPU-s per build
    here); then wait for the leases the warm-up's agents held when they stopped to lapse."""
    drive(port, pid, agents, WARMUP, tasks)
    time.sleep(LEASE_TTL + 0.5)


def new_task(port: int, blocks: int, converge: bool) -> dict[str, str]:
    body: dict[str, Any] = {
        "kind": "quadratic",
        "params": {"blocks": blocks, "dim": 4, "coupling": 0.3},
        "merge_policy": "checked",
    }
    if not converge:  # keep the task running for the whole measurement
        body |= {"budgets": {"rounds": 1_000_000}, "stop": {"relative_gap": 0.0, "stall_rounds": 1_000_000}}
    status, created = Conn(port, ADMIN).call("POST", "/v1/tasks", body)
    assert status == 201, created
    return created


def serve(api: int, engines: int | None, prefix: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    extra = [
        "--store",
        REDIS,
        "--redis-prefix",
        prefix,
        "--api-workers",
        str(api),
        "--lease-ttl",
        str(LEASE_TTL),
    ]
    if engines is not None:
        extra += ["--engine-workers", str(engines)]
    return start_serve(port, *extra), port


def coordinator_case(
    api: int, engines: int | None, agents: int, seconds: float, n_tasks: int, blocks: int
) -> dict[str, Any]:
    prefix = f"bench-split:{uuid.uuid4().hex[:8]}:"
    proc, port = serve(api, engines, prefix)
    try:
        tasks = [new_task(port, blocks, converge=False) for _ in range(n_tasks)]
        warm_up(port, proc.pid, agents, tasks)
        row = drive(port, proc.pid, agents, seconds, tasks)
        row["rounds"] = sum(Conn(port, ADMIN).call("GET", f"/v1/tasks/{t['id']}")[1]["round"] for t in tasks)
    finally:
        stop(proc)
        purge(prefix)
    return row


def trivial_case(workers: int, agents: int, seconds: float) -> dict[str, Any]:
    port = free_port()
    proc = start_trivial(port, "--workers", str(workers))
    try:
        return drive(port, proc.pid, agents, seconds, None)
    finally:
        stop(proc)


def part_ratio(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for rep in range(args.repeats):
        for k in (1, 2):
            t = trivial_case(k, args.agents, args.seconds)
            cases = {"in-process": (k, None)}
            if k == 2:
                cases["split 1 API + 1 engine"] = (1, 1)
            for name, (api, engines) in cases.items():
                c = coordinator_case(api, engines, args.agents, args.seconds, 1, 64)
                ratio = c["proposals_per_s"] / t["requests_per_s"]
                out.append(
                    {
                        "repeat": rep,
                        "processes": k,
                        "case": name,
                        "trivial": t,
                        "coordinator": c,
                        "ratio": ratio,
                    }
                )
                print(
                    f"[ratio rep {rep}] {k} server process(es): trivial {t['requests_per_s']:.0f} req/s; "
                    f"{name}: {c['proposals_per_s']:.0f} proposals/s (ratio {ratio:.2f}), "
                    f"server CPU {c['server_cpu_s']:.1f}s + redis {c['redis_cpu_s']:.1f}s, "
                    f"submit p50 {c['p50_ms']:.0f} ms",
                    flush=True,
                )
    return out


def part_scaleout(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for rep in range(args.repeats):
        for engines in (1, 2, 4):
            c = coordinator_case(2, engines, args.agents, args.seconds, 8, 64)
            out.append({"repeat": rep, "engines": engines, "coordinator": c})
            print(
                f"[scaleout rep {rep}] 2 API + {engines} engine: {c['proposals_per_s']:.0f} proposals/s "
                f"over 8 tasks, {c['rounds']} rounds, server CPU {c['server_cpu_s']:.1f}s "
                f"+ redis {c['redis_cpu_s']:.1f}s",
                flush=True,
            )
    return out


def part_tasks50(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for rep in range(args.repeats):
        prefix = f"bench-split:{uuid.uuid4().hex[:8]}:"
        proc, port = serve(1, 1, prefix)
        try:
            tasks = [new_task(port, 16, converge=True) for _ in range(50)]
            row = drive(port, proc.pid, 200, args.tasks_seconds, tasks, procs=4)
            views = [Conn(port, ADMIN).call("GET", f"/v1/tasks/{t['id']}")[1] for t in tasks]
        finally:
            stop(proc)
            purge(prefix)
        statuses: dict[str, int] = {}
        for v in views:
            statuses[v["status"]] = statuses.get(v["status"], 0) + 1
        row |= {"statuses": statuses, "max_rel_gap": max(v["relative_gap"] for v in views)}
        out.append({"repeat": rep, **row})
        print(
            f"[tasks50 rep {rep}] statuses {statuses}, max rel gap {row['max_rel_gap']:.1e}, "
            f"submit p50 {row['p50_ms']:.0f} ms p99 {row['p99_ms']:.0f} ms, {row['proposals']} proposals",
            flush=True,
        )
    return out


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.2f} (min {min(xs):.2f}, max {max(xs):.2f}, n={len(xs)})"


def summary(results: dict[str, Any]) -> list[str]:
    lines = []
    for k, name in ((1, "in-process"), (2, "in-process"), (2, "split 1 API + 1 engine")):
        xs = [r["ratio"] for r in results.get("ratio", []) if r["processes"] == k and r["case"] == name]
        if xs:
            lines.append(f"ratio, {k} server process(es), {name}: {spread(xs)}")
    for e in (1, 2, 4):
        xs = [r["coordinator"]["proposals_per_s"] for r in results.get("scaleout", []) if r["engines"] == e]
        if xs:
            lines.append(f"scale-out, 8 tasks, 2 API + {e} engine: proposals/s {spread(xs)}")
    rows = results.get("tasks50", [])
    if rows:
        lines.append(f"50 tasks x 4 agents: p99 submit ms {spread([r['p99_ms'] for r in rows])}")
        lines.append(
            "50 tasks x 4 agents: converged (optimal) per run: "
            + ", ".join(str(r["statuses"].get("optimal", 0)) + "/50" for r in rows)
        )
    return lines


def main() -> None:
    ap = Parser(prog="service_split", description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="ratio,scaleout,tasks50")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument(
        "--tasks-seconds", type=float, default=60.0, help="time limit for the 50 tasks to converge"
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; Redis at {REDIS}", flush=True)
    parts = {"ratio": part_ratio, "scaleout": part_scaleout, "tasks50": part_tasks50}
    results: dict[str, Any] = {"argv": sys.argv[1:], "started": time.time(), "cores": os.cpu_count()}
    for name in args.parts.split(","):
        results[name] = parts[name](args)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    results["load_average_end"] = os.getloadavg()[0]
    results["summary"] = summary(results)
    print("\n".join(results["summary"]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
