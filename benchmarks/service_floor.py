"""How far issue 13's service target can go: the floor endpoint against the trivial one (not a test).

The target is proposals/s ≥ 0.5× a trivial FastAPI endpoint's requests/s with the same number of server
processes. A proposal must at least be validated, written to the store, given a verdict by another task or
process, and answered; ``benchmarks/service_floor_app.py`` does exactly that and nothing else. Per
layout, in one run, the same load generator (64 agents, ``http.client`` keep-alive threads, the
proposal-shaped body) drives, one after the other:

- the trivial endpoint (``benchmarks/service_trivial_app.py``) with K uvicorn workers,
- the floor endpoint with K server processes,
- with ``--coordinator``, the coordinator itself with K server processes (64 agents, quadratic-64,
  ``/next`` protocol, from benchmarks/service_split.py and service_throughput.py).

Layouts: ``memory`` (1 process; in-process queue / the coordinator's memory store), ``redis`` (1 process,
Redis store, verdicts from a task of the same process), ``split`` (2 processes: API + verdict producer /
1 API + 1 engine, Redis store; the trivial endpoint gets 2 workers). The floor's ratio bounds the
coordinator's: whatever is optimized inside the proposal path, it cannot do less than the floor.

    .venv/bin/python benchmarks/service_floor.py [--layouts memory,redis,split] [--seconds 10]
        [--coordinator] [--json benchmarks/results/service_floor.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from service_split import REDIS, coordinator_case, purge, redis_pid, tree_cpu  # noqa: E402
from service_throughput import (  # noqa: E402
    ADMIN,
    PROPOSAL_BODY,
    Conn,
    cpu_seconds,
    create_task,
    free_port,
    load,
    start,
    start_serve,
    start_trivial,
    stop,
)


def post_loop(port: int, path: str, expect: int, deadline: float, out: dict[str, Any]) -> None:
    c = Conn(port)
    lat: list[float] = []
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        status, answer = c.call("POST", path, PROPOSAL_BODY)
        lat.append(time.perf_counter() - t0)
        assert status == expect, (status, answer)
    out.update(submit=lat, requests=len(lat))


def gen_process(
    port: int, path: str, expect: int, agents: int, start_at: float, seconds: float, q: Any
) -> None:
    while time.time() < start_at:
        time.sleep(0.005)
    deadline = time.monotonic() + seconds
    results: list[dict[str, Any]] = [{} for _ in range(agents)]
    threads = [
        threading.Thread(target=post_loop, args=(port, path, expect, deadline, results[i]))
        for i in range(agents)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.put(
        {"submit": [x for r in results for x in r["submit"]], "requests": sum(r["requests"] for r in results)}
    )


def drive(port: int, pids: list[int], path: str, expect: int, agents: int, seconds: float) -> dict[str, Any]:
    """``agents`` threads in 2 processes POST ``path`` for ``seconds``: rate, latency, CPU of ``pids``."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    start_at = time.time() + 2.0
    per = [agents // 2 + agents % 2, agents // 2]
    children = [
        ctx.Process(target=gen_process, args=(port, path, expect, n, start_at, seconds, q)) for n in per
    ]
    for ch in children:
        ch.start()
    while time.time() < start_at:
        time.sleep(0.005)
    rpid = redis_pid()
    cpu0, r0 = sum(tree_cpu(p) for p in pids), (cpu_seconds(rpid) if rpid else 0.0)
    t0 = time.monotonic()
    parts = [q.get(timeout=seconds + 120) for _ in children]
    wall = time.monotonic() - t0
    cpu1, r1 = sum(tree_cpu(p) for p in pids), (cpu_seconds(rpid) if rpid else 0.0)
    for ch in children:
        ch.join()
    lat = sorted(x for p in parts for x in p["submit"])
    requests = sum(p["requests"] for p in parts)
    return {
        "requests_per_s": requests / wall,
        "p50_ms": 1000 * lat[len(lat) // 2],
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "server_cpu_s": cpu1 - cpu0,
        "redis_cpu_s": r1 - r0,
        "server_us_per_request": 1e6 * (cpu1 - cpu0) / max(1, requests),
        "requests": requests,
        "wall_s": wall,
    }


def floor_case(layout: str, agents: int, seconds: float) -> dict[str, Any]:
    prefix = f"bench-floor:{uuid.uuid4().hex[:8]}:"
    store = {"memory": "memory", "redis": "redis", "split": "redis-split"}[layout]
    env = {"FLOOR_STORE": store, "FLOOR_PREFIX": prefix, "REDIS_URL": REDIS}
    producer = None
    if layout == "split":
        producer = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "service_floor_app.py")],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        )
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "benchmarks.service_floor_app:app", "--port", str(port)]
    api = start([*cmd, "--log-level", "warning", "--no-access-log"], port, "/docs", env=env)
    try:
        pids = [api.pid] + ([producer.pid] if producer else [])
        return drive(port, pids, "/proposals", 200, agents, seconds)
    finally:
        stop(api)
        if producer is not None:
            stop(producer)
        purge(prefix)


def trivial_case(workers: int, agents: int, seconds: float) -> dict[str, Any]:
    port = free_port()
    proc = start_trivial(port, "--workers", str(workers))
    try:
        return drive(port, [proc.pid], "/echo", 202, agents, seconds)
    finally:
        stop(proc)


def coordinator_memory(agents: int, seconds: float) -> dict[str, Any]:
    """The coordinator in one process on its memory store (service_throughput's rounds/checked/next)."""
    port = free_port()
    serve = start_serve(port)
    try:
        task = create_task(port, "rounds", "checked", 64)
        row = load("coordinator", port, task, agents, 2, seconds, serve.pid, 5.0, chain=True)
        row["rounds"] = Conn(port, ADMIN).call("GET", f"/v1/tasks/{task['id']}")[1]["round"]
        return row
    finally:
        stop(serve)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layouts", default="memory,redis,split")
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--coordinator", action="store_true", help="also run the coordinator in each layout")
    ap.add_argument("--json", type=Path, metavar="PATH")
    args = ap.parse_args()
    processes = {"memory": 1, "redis": 1, "split": 2}
    results: list[dict[str, Any]] = []
    for layout in args.layouts.split(","):
        k = processes[layout]
        row: dict[str, Any] = {"layout": layout, "processes": k}
        row["trivial"] = trivial_case(k, args.agents, args.seconds)
        row["floor"] = floor_case(layout, args.agents, args.seconds)
        if args.coordinator:
            if layout == "memory":
                row["coordinator"] = coordinator_memory(args.agents, args.seconds)
            else:
                engines = 1 if layout == "split" else None
                row["coordinator"] = coordinator_case(1, engines, args.agents, args.seconds, 1, 64)
        t = row["trivial"]["requests_per_s"]
        row["floor_ratio"] = row["floor"]["requests_per_s"] / t
        line = (
            f"{layout} ({k} server process{'es' if k > 1 else ''}): trivial {t:.0f} req/s "
            f"({row['trivial']['server_us_per_request']:.0f} us/req); "
            f"floor {row['floor']['requests_per_s']:.0f} "
            f"proposals/s ({row['floor']['server_us_per_request']:.0f} us/proposal, redis "
            f"{row['floor']['redis_cpu_s']:.1f}s), ratio {row['floor_ratio']:.2f}"
        )
        if "coordinator" in row:
            c = row["coordinator"]
            row["coordinator_ratio"] = c["proposals_per_s"] / t
            us = 1e6 * c["server_cpu_s"] / max(1, c["proposals"])
            line += f"; coordinator {c['proposals_per_s']:.0f} proposals/s ({us:.0f} us/proposal), ratio "
            line += f"{row['coordinator_ratio']:.2f}"
        print(line, flush=True)
        results.append(row)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": results}, indent=1)
        )


if __name__ == "__main__":
    main()
