"""Frame times of the task page at the issue's sizes: 2,000 rounds, 400 robots, 64 agents, in headless Chromium.

A real coordinator (in this process) holds a real 400-robot routing task on the warehouse map; 64 agents
join over HTTP and each holds a lease, so the agents table and the map come from the real API. The 2,000
history rows (with forecast fields, hits, misses and regroupings) are generated and fed through the page's
own event handler as fast as the stream would deliver them (``--rows-per-frame``), while the robots play.
Side by side from one run: the same page idle (animation only) against the page under that load.

    .venv/bin/python -m benchmarks.ui_frames --out benchmarks/results/ui_frames.json
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from pydantic import SecretStr

from benchmarks.lib.browser import Browser, find_executables
from benchmarks.lib.cli import Parser, fail
from coordinator.api.embedded import EmbeddedServer
from coordinator.api.main import create_app
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore

TOKEN = "bench-admin-token-0123456789"

MEASURE = """
const [ms, feed, done] = arguments;
const page = window.blockoptPage;
const t = [], long = [];
let obs = null;
try { obs = new PerformanceObserver((l) => l.getEntries().forEach((e) => long.push(e.duration)));
      obs.observe({ entryTypes: ["longtask"] }); } catch (e) {}
let fed = 0;
const start = performance.now();
function step(now) {
  t.push(now);
  if (feed) {  // rows arrive between frames, as stream chunks would
    const until = Math.min(feed.rows.length, fed + feed.perFrame);
    for (; fed < until; fed++) page.onEvent("round", feed.rows[fed]);
    if (fed % 97 === 0 && page.agents) { page.agentsDirty = true; page.schedule(); }
  }
  if (now - start < ms || (feed && fed < feed.rows.length)) requestAnimationFrame(step);
  else requestAnimationFrame(() => requestAnimationFrame(finish));  // let the last rows render
}
function finish() {
  if (obs) obs.disconnect();
  const d = t.slice(1).map((x, i) => x - t[i]).sort((a, b) => a - b);
  const q = (f) => d[Math.min(d.length - 1, Math.floor(f * d.length))];
  done({ frames: d.length, p50_ms: q(0.5), p95_ms: q(0.95), p99_ms: q(0.99), max_ms: d[d.length - 1],
         long_tasks: long.length, longest_task_ms: long.length ? Math.max(...long) : 0,
         rows_fed: fed, points: page.chart.drawn,
         table_rows: document.querySelectorAll("#rounds tbody tr").length,
         robot_paths: document.querySelectorAll("svg.routing-map polyline.robot-path").length,
         agent_rows: document.querySelectorAll("#agents tbody tr").length });
}
requestAnimationFrame(step);
"""


def rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """A plausible history: geometric decrease with noise, a one-step forecast above it, some misses."""
    rng = random.Random(seed)
    out, gap = [], 1e6
    for r in range(n):
        predicted = gap * 0.97  # the one-step bound; about one round in six misses it
        gap = gap * rng.uniform(0.85, 0.999)
        out.append(
            {
                "round": r,
                "version": r + 1,
                "objective": 1000 + gap,
                "gap": gap,
                "proposals": 64,
                "accepted": rng.randint(0, 64),
                "interfering": rng.randint(0, 40),
                "merge_kind": "independent",
                "kappa": 0.3,
                "gamma": 0.9,
                "delta": 0.0,
                "rhs": gap * 1.1,
                "held": True,
                "checks": 0,
                "engine_seconds": 0.01,
                "eval_seconds": 0.01,
                "regrouped": r % 250 == 249,
                "predicted_gap": predicted,
                "hit": gap <= predicted,
            }
        )
    return out


def main() -> int:
    ap = Parser(prog="ui_frames", description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--robots", type=int, default=400)
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--rows-per-frame", type=int, default=4, help="rounds arriving between two frames")
    ap.add_argument("--idle-ms", type=int, default=3000)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--screenshot", type=Path, default=None)
    args = ap.parse_args()

    settings = ServiceSettings(admin_token=SecretStr(TOKEN), lease_ttl=600.0, rate_per_agent=1000.0)
    app = create_app(settings, MemoryStore(), CollectorRegistry())
    try:
        chromium, driver = find_executables()
    except LookupError as exc:
        fail("ui_frames", str(exc))
    with (
        EmbeddedServer(app) as server,
        httpx.Client(base_url=server.url, timeout=120, headers={"Authorization": f"Bearer {TOKEN}"}) as admin,
    ):
        created = admin.post(
            "/v1/tasks",
            json={
                "kind": "routing",
                "params": {
                    "map": "warehouse-10-20-10-2-1",
                    "robots": args.robots,
                    "blocks": args.agents,
                    "exact_limit": 0,
                },
                "budgets": {"seconds": 3600},
            },
        ).json()
        tid = created["id"]
        for i in range(args.agents):  # real agents, each holding a lease
            joined = httpx.post(
                f"{server.url}/v1/tasks/{tid}/agents",
                json={"name": f"bench-{i}"},
                headers={"Authorization": f"Bearer {created['join_token']}"},
            ).json()
            httpx.post(
                f"{server.url}/v1/tasks/{tid}/leases", headers={"Authorization": f"Bearer {joined['token']}"}
            )
        b = Browser(chromium, driver)
        try:
            b.open(f"{server.url}/ui/#/tasks/{tid}")
            b.set_token(TOKEN)
            b.wait(lambda: b.count("svg.routing-map polyline.robot-path") == args.robots, 120, "the map")
            b.wait(lambda: b.count("#agents tbody tr") == args.agents, 60, "the agents table")
            b.js("document.getElementById('routing-play').click();")
            b.driver.set_script_timeout(300)
            idle = b.driver.execute_async_script(MEASURE, args.idle_ms, None)
            t0 = time.perf_counter()
            loaded = b.driver.execute_async_script(
                MEASURE, 0, {"rows": rows(args.rounds), "perFrame": args.rows_per_frame}
            )
            wall = time.perf_counter() - t0
            if args.screenshot is not None:
                b.screenshot(args.screenshot)
        finally:
            b.close()
    result = {
        "command": " ".join(sys.argv),
        "rounds": args.rounds,
        "robots": args.robots,
        "agents": args.agents,
        "rows_per_frame": args.rows_per_frame,
        "idle_animation": idle,
        "under_load": loaded,
        "load_wall_s": round(wall, 2),
        "ratio_p95_load_over_idle": round(loaded["p95_ms"] / idle["p95_ms"], 2)
        if idle["p95_ms"]
        else math.nan,
    }
    print(json.dumps(result, indent=2))
    print(
        f"frame p50/p95/max: idle {idle['p50_ms']:.1f}/{idle['p95_ms']:.1f}/{idle['max_ms']:.1f} ms; "
        f"under load {loaded['p50_ms']:.1f}/{loaded['p95_ms']:.1f}/{loaded['max_ms']:.1f} ms "
        f"(p95 ratio {result['ratio_p95_load_over_idle']})"
    )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
