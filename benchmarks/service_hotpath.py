"""A proposal's request, step by step, before and after the split (issue 13 item 4; not a test).

One run, side by side, same store (Redis), same load (64 simulated agents on quadratic-64, checked merging,
one request per proposal as `blockopt agent` does):

- before: ``blockopt serve --store redis`` (one process: API and round engine, the engine in a thread);
- after: ``blockopt serve --store redis --api-workers 1 --engine-workers 1`` (the API process runs no round).

py-spy (``--gil``: samples only while a thread holds the interpreter lock, i.e. CPU spent in Python) records
the process that serves the HTTP requests; its samples are sorted into the steps of a proposal's request and
turned into CPU microseconds per proposal (share of samples x the process's CPU seconds / proposals). The
engine process's CPU per proposal is given beside.

    .venv/bin/python benchmarks/service_hotpath.py [--seconds 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import service_steps  # noqa: E402
from service_split import LEASE_TTL, REDIS, drive, new_task, purge, warm_up  # noqa: E402
from service_throughput import ADMIN, Conn, cpu_seconds, free_port, profiler, stop, wait_ready  # noqa: E402

STEPS: list[tuple[str, tuple[str, ...]]] = [
    # (step, substrings of a frame that put a sample in it); the innermost frame that matches decides
    (
        "round engine (scoring, selection)",
        ("coordinator/engine.py", "coordinator/selection.py", "coordinator/engine/", "tasks/"),
    ),
    (
        "round bookkeeping (ledger, records, metrics)",
        (
            "coordinator/ledger.py",
            "coordinator/convergence.py",
            "coordinator/metrics.py",
            "coordinator/books.py",
            "coordinator/reports/",
            "coordinator/runtime/metrics.py",
        ),
    ),
    ("wake-up bus (publish)", ("coordinator/notify.py", "coordinator/store/bus.py")),
    ("store write and reads (Redis client)", ("coordinator/store/", "redis/")),
    ("auth (cached)", ("authenticate", "coordinator/auth.py", "coordinator/runtime/auth.py")),
    (
        "next lease (contract)",
        ("contract_envelope", "coordinator/inproc.py", "coordinator/runtime/inproc.py", "with_next_lease"),
    ),
    ("long-poll wait and wake", ("proposal (", "wake (", "changed (")),
    ("request validation (pydantic)", ("pydantic", "fastapi/dependencies", "_request_body")),
    ("response encoding", ("model_response", "serialize_response", "json/encoder", "fastapi/encoders")),
    ("HTTP parsing and protocol", ("h11", "httptools", "uvicorn/protocols")),
    ("routing and middleware (starlette/fastapi)", ("starlette", "fastapi")),
    ("event loop", ("asyncio", "uvloop", "selectors")),
]


def steps_of(profile: Path) -> dict[str, float]:
    """Share of the samples per step of this script's ``STEPS`` (``service_steps.steps_of``)."""
    return service_steps.steps_of(profile, STEPS)


def start_logged(port: int, extra: list[str], log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "blockopt", "serve", "--port", str(port), "--log-level", "info"]
    cmd += ["--rate-per-agent", "100000", "--round-deadline", "1.0", "--lease-ttl", str(LEASE_TTL), *extra]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "BLOCKOPT_ADMIN_TOKEN": ADMIN},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wait_ready(port, "/readyz", timeout=120)
    return proc


def case(name: str, extra: list[str], args: argparse.Namespace, outdir: Path) -> dict[str, Any]:
    prefix = f"bench-hot:{uuid.uuid4().hex[:8]}:"
    port, log = free_port(), outdir / f"{name}.log"
    proc = start_logged(port, ["--store", REDIS, "--redis-prefix", prefix, *extra], log)
    try:
        pids = dict(re.findall(r"(api|engine) worker 0 started \(pid (\d+)\)", log.read_text()))
        api = int(pids.get("api", proc.pid))
        engine = int(pids["engine"]) if "engine" in pids else None
        task = new_task(port, 64, converge=False)
        warm_up(port, proc.pid, args.agents, [task])
        prof = outdir / f"{name}.txt"
        e0 = cpu_seconds(engine) if engine else 0.0
        a0 = cpu_seconds(api)
        spy_start = time.time() + 2.0  # drive() starts the agents 2 s from now
        spy: subprocess.Popen[bytes] | None = None

        def attach() -> None:
            nonlocal spy
            while time.time() < spy_start:
                time.sleep(0.01)
            spy = profiler(api, args.seconds, str(prof))

        import threading

        t = threading.Thread(target=attach)
        t.start()
        row = drive(port, proc.pid, args.agents, args.seconds, [task])
        t.join()
        if spy is not None:
            spy.wait()
        row["api_cpu_s"] = cpu_seconds(api) - a0
        row["engine_cpu_s"] = (cpu_seconds(engine) - e0) if engine else 0.0
        row["rounds"] = Conn(port, ADMIN).call("GET", f"/v1/tasks/{task['id']}")[1]["round"]
        row["steps"] = steps_of(prof) if prof.exists() else {}
    finally:
        stop(proc)
        purge(prefix)
    n = max(1, row["proposals"])
    row["api_us_per_proposal"] = 1e6 * row["api_cpu_s"] / n
    row["engine_us_per_proposal"] = 1e6 * row["engine_cpu_s"] / n
    row["steps_us_per_proposal"] = {k: v * row["api_us_per_proposal"] for k, v in row["steps"].items()}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    outdir = Path(tempfile.mkdtemp(prefix="blockopt-hotpath-"))
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; profiles in {outdir}", flush=True)
    rows = {
        "before (one process)": case("before", [], args, outdir),
        "after (1 API + 1 engine)": case(
            "after", ["--api-workers", "1", "--engine-workers", "1"], args, outdir
        ),
    }
    names = list(rows)
    steps = sorted({s for r in rows.values() for s in r["steps_us_per_proposal"]})
    print(f"{'CPU us per proposal in the HTTP process':46s} " + " ".join(f"{n:>26s}" for n in names))
    for s in sorted(steps, key=lambda s: -rows[names[0]]["steps_us_per_proposal"].get(s, 0.0)):
        print(f"{s:46s} " + " ".join(f"{rows[n]['steps_us_per_proposal'].get(s, 0.0):26.0f}" for n in names))
    print(
        f"{'total (HTTP process)':46s} " + " ".join(f"{rows[n]['api_us_per_proposal']:26.0f}" for n in names)
    )
    print(f"{'engine process':46s} " + " ".join(f"{rows[n]['engine_us_per_proposal']:26.0f}" for n in names))
    print(f"{'proposals/s':46s} " + " ".join(f"{rows[n]['proposals_per_s']:26.1f}" for n in names))
    if args.json:
        args.json.write_text(
            json.dumps({"argv": sys.argv[1:], "load": os.getloadavg()[0], "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
