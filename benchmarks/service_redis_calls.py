"""Redis commands per proposal on the split coordinator (a count: it does not depend on the load).

Starts a private ``redis-server`` on a free port (nothing else talks to it), runs ``blockopt serve`` on it
(1 API + 1 engine process, or in-process with ``--in-process``), drives 64 agents on quadratic-64 with
the ``/next`` protocol (one request per proposal; the load generator of benchmarks/service_split.py),
and reads Redis's own per-command counters (``INFO commandstats``, reset after the warm-up). A pipelined
group of commands is one network round trip but several commands here; ``EVALSHA`` is one Lua script.

    .venv/bin/python benchmarks/service_redis_calls.py [--seconds 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--in-process", action="store_true", help="one process running rounds, no engine process")
    ap.add_argument("--json", type=Path, metavar="PATH")
    args = ap.parse_args()
    server = shutil.which("redis-server")
    if server is None:
        sys.exit("redis-server is not installed")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-redis-calls-")
    redis_proc = subprocess.Popen(
        [server, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
    )
    os.environ["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    root = Path(__file__).resolve().parent.parent
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    import redis
    import service_split as split  # reads REDIS_URL at import

    try:
        client = redis.Redis(port=port, decode_responses=True)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        proc, api_port = split.serve(1, None if args.in_process else 1, "calls:")
        try:
            task = split.new_task(api_port, 64, converge=False)
            split.warm_up(api_port, proc.pid, args.agents, [task])
            client.config_resetstat()
            row = split.drive(api_port, proc.pid, args.agents, args.seconds, [task])
            stats = client.info("commandstats")
        finally:
            split.stop(proc)
    finally:
        redis_proc.terminate()
        redis_proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)
    n = max(1, row["proposals"])
    calls = {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items() if k.startswith("cmdstat_")}
    calls.pop("config", None)
    calls.pop("info", None)
    per = {k: v / n for k, v in sorted(calls.items(), key=lambda kv: -kv[1])}
    layout = "in-process" if args.in_process else "split 1 API + 1 engine"
    print(f"{layout}: {row['proposals']} proposals in {args.seconds:.0f} s; Redis commands per proposal:")
    for name, value in per.items():
        print(f"  {name:12s} {value:6.2f}")
    print(f"  {'total':12s} {sum(per.values()):6.2f}")
    if args.json:
        out: dict[str, Any] = {"layout": layout, "row": row, "calls": calls, "per_proposal": per}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
