"""One process per worker vs many workers per process, for `blockopt fleet` (not a test).

Each layout drives a fresh quadratic task (n=64, d=4, coupling 0.3, checked
merging) to convergence against one `blockopt serve` process and reports the
wall time from starting the fleet to `converged`, the time until every agent
had joined, proposals/s, and the CPU seconds the fleet spent. Layouts:

- ``procs``: one OS process per worker (``--processes N``);
- ``threads``: one process, N worker threads (sync httpx.Client each);
- ``2 procs``: one process per core, N/2 threads each (the default);
- ``asyncio``: one process, N asyncio tasks sharing one ``httpx.AsyncClient``
  (not a fleet mode: measured here because AsyncClient is known to degrade with
  many concurrent requests in one process).

    .venv/bin/python benchmarks/service_fleet.py [--agents 16,64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_throughput import ADMIN, ROOT, free_port, start_serve, stop  # noqa: E402

PARAMS = {"blocks": 64, "dim": 4, "coupling": 0.3}


def create(admin: httpx.Client) -> dict[str, Any]:
    r = admin.post("/v1/tasks", json={"kind": "quadratic", "params": PARAMS, "merge_policy": "checked"})
    r.raise_for_status()
    return r.json()


def watch(admin: httpx.Client, tid: str, agents: int, t0: float, timeout: float = 600) -> tuple[float, float]:
    """(seconds until every agent joined, seconds until the task ended)."""
    joined_at = float("nan")
    while time.monotonic() - t0 < timeout:
        v = admin.get(f"/v1/tasks/{tid}").json()
        if v["agents"] >= agents and joined_at != joined_at:
            joined_at = time.monotonic() - t0
        if v["status"] != "running":
            return joined_at, time.monotonic() - t0
        time.sleep(0.05)
    raise RuntimeError("timed out")


async def async_fleet(url: str, task: dict[str, Any], agents: int) -> None:
    from tasks.quadratic import QuadraticProposer

    async with httpx.AsyncClient(
        base_url=url, timeout=60, limits=httpx.Limits(max_connections=agents)
    ) as client:

        async def one(i: int) -> None:
            tid = task["id"]
            r = await client.post(
                f"/v1/tasks/{tid}/agents",
                json={"name": f"async-{i}"},
                headers={"Authorization": f"Bearer {task['join_token']}"},
            )
            h = {"Authorization": f"Bearer {r.json()['token']}"}
            proposer = QuadraticProposer(seed=i)
            while True:
                r = await client.post(f"/v1/tasks/{tid}/leases", headers=h)
                if r.status_code == 429 and r.json()["error"]["code"] == "no_block_available":
                    await asyncio.sleep(r.json()["error"]["retry_after"])
                    continue
                if r.status_code != 201:
                    return
                g = r.json()
                d = proposer.propose(g["contract"])
                assert d is not None
                body = {
                    "lease_id": g["lease_id"],
                    "block": d.block,
                    "base_version": g["version"],
                    "value": d.value,
                    "predicted_improvement": d.predicted_improvement,
                    "usage": {"calls": 1},
                }
                r = await client.post(f"/v1/tasks/{tid}/proposals", json=body, params={"wait": 2}, headers=h)
                while r.status_code == 202:
                    r = await client.get(
                        f"/v1/tasks/{tid}/proposals/{r.json()['id']}", params={"wait": 2}, headers=h
                    )
                if r.status_code != 200:
                    return

        await asyncio.gather(*(one(i) for i in range(agents)))


def run_layout(layout: str, agents: int) -> dict[str, Any]:
    port = free_port()
    serve = start_serve(port, round_deadline=None)
    url = f"http://127.0.0.1:{port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)
    try:
        task = create(admin)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        if layout == "asyncio":
            cmd = [
                sys.executable,
                "-c",
                "import asyncio, json, sys; sys.path.insert(0, 'benchmarks');"
                "from service_fleet import async_fleet;"
                f"asyncio.run(async_fleet({url!r}, json.loads(sys.argv[1]), {agents}))",
                __import__("json").dumps(task),
            ]
        else:
            procs = {"procs": agents, "threads": 1, "2 procs": 2}[layout]
            cmd = [
                sys.executable,
                "-m",
                "blockopt",
                "fleet",
                "--coordinator",
                url,
                "--task",
                task["id"],
                "--agents",
                str(agents),
                "--processes",
                str(procs),
                "--log-level",
                "warning",
            ]
        fleet = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "BLOCKOPT_JOIN_TOKEN": task["join_token"]},
        )
        joined, done = watch(admin, task["id"], agents, t0)
        fleet.wait(60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = admin.get(f"/v1/tasks/{task['id']}/report").json()
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        received = report["proposals"]["received"]
        return {
            "layout": layout,
            "agents": agents,
            "joined_s": joined,
            "converged_s": done,
            "rounds": report["rounds"],
            "proposals": received,
            "proposals_per_s_after_join": received / max(1e-9, done - joined)
            if joined == joined
            else float("nan"),
            "fleet_cpu_s": cpu,
            "status": report["status"],
        }
    finally:
        admin.close()
        stop(serve)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", default="16,64")
    ap.add_argument("--layouts", default="procs,threads,2 procs,asyncio")
    args = ap.parse_args()
    print(f"quadratic {PARAMS}, checked merging, one `blockopt serve` process; {os.cpu_count()} cores")
    print(
        f"{'layout':10s} {'agents':>6s} {'all joined s':>12s} {'converged s':>11s} {'rounds':>6s} "
        f"{'proposals':>9s} {'prop/s after join':>17s} {'fleet cpu s':>11s}  status"
    )
    for n in [int(x) for x in args.agents.split(",")]:
        for layout in args.layouts.split(","):
            r = run_layout(layout, n)
            print(
                f"{r['layout']:10s} {r['agents']:6d} {r['joined_s']:12.2f} {r['converged_s']:11.2f} "
                f"{r['rounds']:6d} {r['proposals']:9d} {r['proposals_per_s_after_join']:17.1f} "
                f"{r['fleet_cpu_s']:11.1f}  {r['status']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
