"""SIMULATED team-size benchmark for LLM agents on routing (issue 6, item 4).

Every figure here is **simulated**: agents run ``--proposer simulated-llm``,
the routing heuristic with the serving latency of GPT-OSS-120B on one H100
(``agents/llm/simulated.py``: prompt / prefill rate + output / decode rate,
decode shared by the team's concurrent streams). No model runs.

For each instance and team size (1 agent controlling all robots, 3, 6), a real
coordinator (embedded, memory store) and the team (worker threads, the real
HTTP protocol) run until the plan is first collision-free; we record the wall
time and the tokens and calls the coordinator had counted by then.

    .venv/bin/python -m benchmarks.llm_team --scens 1,2,3 --teams 1,3,6 --robots 20
"""

from __future__ import annotations

import json
import secrets
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from agents.fleet import run_threads
from agents.worker import WorkerConfig
from benchmarks.lib.cli import Parser
from coordinator.api.embedded import EmbeddedServer
from coordinator.api.main import create_app
from coordinator.settings import ServiceSettings
from coordinator.status import TERMINAL
from coordinator.store import MemoryStore


def solve_once(
    map_name: str, scen: str, robots: int, agents: int, seed: int, effort: str, limit_s: float
) -> dict[str, Any]:
    """One team on one instance until the first collision-free plan (or ``limit_s``)."""
    admin = secrets.token_urlsafe(24)
    settings = ServiceSettings(admin_token=SecretStr(admin), lease_ttl=30.0, round_deadline=2.0)
    app = create_app(settings, MemoryStore(), CollectorRegistry())
    with (
        EmbeddedServer(app) as server,
        httpx.Client(
            base_url=server.url, timeout=60.0, headers={"Authorization": f"Bearer {admin}"}
        ) as client,
    ):
        r = client.post(
            "/v1/tasks",
            json={
                "kind": "routing",
                "merge_policy": "checked",
                "budgets": {"seconds": limit_s + 30},
                "params": {
                    "map": map_name,
                    "scen": scen,
                    "robots": robots,
                    "blocks": agents,
                    "seed": seed,
                    "exact_limit": 0,
                },
                "proposer": {"name": "simulated-llm", "knobs": {}},
            },
        )
        r.raise_for_status()
        task = r.json()
        base = WorkerConfig(
            coordinator=server.url,
            task=task["id"],
            join_token=task["join_token"],
            proposer="simulated-llm",
            seed=seed,
            poll_wait=1.0,
            proposer_options={"concurrent_streams": str(agents), "reasoning_effort": effort},
        )
        stop = threading.Event()
        fleet = threading.Thread(target=run_threads, args=(base, agents, 0, stop), daemon=True)
        started = time.monotonic()
        fleet.start()
        view: dict[str, Any] = {}
        while time.monotonic() - started < limit_s:
            view = client.get(f"/v1/tasks/{task['id']}").json()
            if view["feasible"] or view["status"] in TERMINAL:  # (not while "preparing")
                break
            time.sleep(0.1)
        wall = time.monotonic() - started
        client.post(f"/v1/tasks/{task['id']}/stop")
        stop.set()
        fleet.join(30)
        return {
            "scen": scen,
            "agents": agents,
            "seed": seed,
            "solved": bool(view.get("feasible")),
            "wall_s": round(wall, 2),
            "rounds": view.get("round"),
            "tokens": int(view["usage"]["tokens"]),
            "calls": int(view["usage"]["calls"]),
            "soc_over_lb": round(view["objective"] / view["reference"], 4),
        }


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="llm_team", description=__doc__.splitlines()[0])
    parser.add_argument("--map", default="random-32-32-10")
    parser.add_argument("--scens", default="1,2,3", help="scenario numbers (random-N of the map)")
    parser.add_argument("--robots", type=int, default=20)
    parser.add_argument("--teams", default="1,3,6")
    parser.add_argument("--effort", default="low", choices=["low", "medium", "high"])
    parser.add_argument(
        "--limit", type=float, default=180.0, help="seconds per run before it counts as unsolved"
    )
    parser.add_argument("--out", type=Path, default=Path("out/bench-llm-team.json"))
    args = parser.parse_args(argv)
    teams = [int(t) for t in args.teams.split(",")]
    rows = []
    for i, n in enumerate(int(s) for s in args.scens.split(",")):
        for agents in teams:
            row = solve_once(
                args.map, f"{args.map}-random-{n}", args.robots, agents, i, args.effort, args.limit
            )
            rows.append(row)
            print(f"simulated  {row}", file=sys.stderr, flush=True)
    print(
        f"SIMULATED (GPT-OSS-120B latency model, no model ran): {args.map}, {args.robots} robots, "
        f"effort {args.effort}, scenarios {args.scens}"
    )
    print(
        f"{'agents':>6} {'solved':>7} {'median s':>9} {'median tokens/solved':>21} {'median calls':>13} "
        f"{'median SOC/LB':>14}"
    )
    medians: dict[int, float] = {}
    for agents in teams:
        mine = [r for r in rows if r["agents"] == agents]
        ok = [r for r in mine if r["solved"]]
        med = statistics.median(r["wall_s"] for r in ok) if ok else float("nan")
        medians[agents] = med
        tok = statistics.median(r["tokens"] for r in ok) if ok else float("nan")
        calls = statistics.median(r["calls"] for r in ok) if ok else float("nan")
        soc = statistics.median(r["soc_over_lb"] for r in ok) if ok else float("nan")
        print(f"{agents:>6} {len(ok):>3}/{len(mine):<3} {med:>9.1f} {tok:>21.0f} {calls:>13.0f} {soc:>14.3f}")
    if 1 in medians and max(teams) in medians:
        print(f"simulated wall time, {max(teams)} agents / 1 agent: {medians[max(teams)] / medians[1]:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"simulated": True, "args": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=2)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
