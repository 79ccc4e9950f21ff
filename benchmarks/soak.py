"""Soak: one coordinator (SQLite store) under continuous task churn, agents killed and restarted.

A real ``blockopt serve --store sqlite://... --retain-finished R`` process. The
driver keeps ``--concurrent`` tasks running, cycling through every installed
kind (each with a small instance and a seconds budget, so tasks keep ending);
each task has its own ``blockopt fleet`` process, and every ``--kill-every``
seconds one fleet is SIGKILLed and a new one started on the same task. Every
``--sample`` seconds it records the coordinator's RSS and open file
descriptors (``/proc``), its asyncio tasks, store records (rows) and per-task
caches (``/metrics``), and the tasks the store holds. At the end: each series'
least-squares slope after the warm-up (per hour, and as the change it implies
over the run relative to the series' mean), the error count (coordinator log
lines at ERROR, tracebacks, failed tasks, unexpected HTTP answers), and a PNG.

Usage: python -m benchmarks.soak [--minutes 30] [--out benchmarks/results/soak]
"""

from __future__ import annotations

import json
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.lib.cli import Parser
from coordinator.status import TERMINAL

REPO = Path(__file__).resolve().parent.parent
KINDS: list[dict[str, Any]] = [
    {"kind": "quadratic", "params": {"blocks": 6, "dim": 3, "coupling": 0.6}},
    {
        "kind": "routing",
        "params": {
            "map": "generated",
            "width": 16,
            "height": 16,
            "robots": 12,
            "blocks": 3,
            "exact_limit": 0.0,
        },
    },
    {
        "kind": "sqlplan",
        "params": {"scale": 0.01, "blocks": 2, "baselines": False},
        "proposer": {"name": "heuristic", "knobs": {"proposal_seconds": 1.0}},
    },
    {"kind": "quadratic", "params": {"blocks": 6, "dim": 3, "coupling": 0.3}, "mode": "async"},
]
"""Every installed kind, small instances; quadratic also in async mode."""
SERIES = ("rss_mb", "open_fds", "asyncio_tasks", "store_records", "tasks_held", "cached_tasks")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Slot:
    task_id: str
    kind: str
    join_token: str
    fleet: subprocess.Popen[bytes] | None = None


@dataclass
class Soak:
    url: str
    token: str
    workdir: Path
    agents: int
    task_seconds: float
    rng: random.Random
    slots: list[Slot] = field(default_factory=list)
    created: int = 0
    finished: dict[str, int] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    kills: int = 0
    next_kind: int = 0

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60.0
        )

    def create(self, c: httpx.Client) -> Slot | None:
        body = dict(KINDS[self.next_kind % len(KINDS)])
        self.next_kind += 1
        body["budgets"] = {"seconds": self.task_seconds}
        r = c.post("/v1/tasks", json=body)
        if r.status_code != 201:
            self.unexpected.append(f"create {body['kind']}: {r.status_code} {r.text[:200]}")
            return None
        self.created += 1
        created = r.json()
        slot = Slot(created["id"], body["kind"], created["join_token"])
        self.start_fleet(slot)
        return slot

    def start_fleet(self, slot: Slot) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_JOIN_TOKEN": slot.join_token}
        with (self.workdir / "fleets.log").open("ab") as log:
            slot.fleet = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "blockopt",
                    "fleet",
                    "--coordinator",
                    self.url,
                    "--task",
                    slot.task_id,
                    "--agents",
                    str(self.agents),
                    "--processes",
                    "1",
                    "--seed",
                    str(self.rng.randrange(1 << 16)),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @staticmethod
    def stop_fleet(slot: Slot) -> None:
        if slot.fleet is not None and slot.fleet.poll() is None:
            slot.fleet.terminate()
            try:
                slot.fleet.wait(20)
            except subprocess.TimeoutExpired:
                slot.fleet.kill()
                slot.fleet.wait(5)

    def churn(self, c: httpx.Client) -> None:
        """Replace every finished task with a new one (of the next kind)."""
        for i, slot in enumerate(list(self.slots)):
            r = c.get(f"/v1/tasks/{slot.task_id}")
            if r.status_code != 200:
                self.unexpected.append(f"view {slot.task_id}: {r.status_code} {r.text[:200]}")
                continue
            status = r.json()["status"]
            if status in TERMINAL:
                self.finished[status] = self.finished.get(status, 0) + 1
                self.stop_fleet(slot)
                new = self.create(c)
                if new is not None:
                    self.slots[i] = new

    def kill_one(self) -> None:
        live = [s for s in self.slots if s.fleet is not None and s.fleet.poll() is None]
        if not live:
            return
        slot = self.rng.choice(live)
        assert slot.fleet is not None
        slot.fleet.send_signal(signal.SIGKILL)
        slot.fleet.wait(10)
        self.kills += 1
        self.start_fleet(slot)


def metric_values(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


def sample(pid: int, c: httpx.Client, t0: float, db: Path) -> dict[str, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    m = metric_values(c.get("/metrics").text)
    held = sum(v for k, v in m.items() if k.startswith("blockopt_tasks{"))
    files = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return {
        "t": round(time.monotonic() - t0, 1),
        "rss_mb": rss_kb / 1024,
        "open_fds": fds,
        "asyncio_tasks": m.get("blockopt_asyncio_tasks", float("nan")),
        "store_records": m.get("blockopt_store_records", float("nan")),
        "tasks_held": held,
        "cached_tasks": m.get('blockopt_service_cached{cache="built"}', float("nan")),
        "cached_specs": m.get('blockopt_service_cached{cache="specs"}', float("nan")),
        "cached_agents": m.get('blockopt_service_cached{cache="agents"}', float("nan")),
        "db_mb": files / 1e6,
    }


def slopes(samples: list[dict[str, float]], warmup: float) -> dict[str, dict[str, float]]:
    """Least-squares slope of each series after the warm-up: per hour, and the change over the measured
    span relative to the series' mean (0.05 = grew by 5% of its level across the run)."""
    after = [s for s in samples if s["t"] >= warmup]
    out: dict[str, dict[str, float]] = {}
    if len(after) < 3:
        return out
    t = np.array([s["t"] for s in after])
    span = float(t[-1] - t[0])
    for name in (*SERIES, "db_mb"):
        y = np.array([s[name] for s in after], dtype=float)
        slope = float(np.polyfit(t, y, 1)[0])
        mean = float(np.mean(y))
        out[name] = {
            "per_hour": slope * 3600,
            "relative_over_run": slope * span / mean if mean else 0.0,
            "mean": mean,
            "min": float(np.min(y)),
            "max": float(np.max(y)),
        }
    return out


def plot(samples: list[dict[str, float]], warmup: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = (*SERIES, "db_mb")
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 2 * len(names)), sharex=True)
    t = [s["t"] / 60 for s in samples]
    for ax, name in zip(axes, names):
        ax.plot(t, [s[name] for s in samples], marker=".", lw=1)
        ax.axvline(warmup / 60, color="grey", ls=":", lw=1)
        ax.set_ylabel(name, fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("minutes (dotted: end of warm-up)")
    fig.suptitle("soak: one coordinator (sqlite store), task churn, agents SIGKILLed and restarted")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> int:
    ap = Parser(prog="soak", description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=300.0, help="seconds left out of the slopes")
    ap.add_argument("--concurrent", type=int, default=3, help="tasks running at once")
    ap.add_argument("--agents", type=int, default=2, help="agents per task (one fleet process)")
    ap.add_argument("--task-seconds", type=float, default=45.0, help="each task's seconds budget")
    ap.add_argument("--retain", type=float, default=60.0, help="--retain-finished of the coordinator")
    ap.add_argument("--kill-every", type=float, default=20.0, help="seconds between fleet SIGKILLs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "soak")
    args = ap.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="blockopt-soak-"))
    db = workdir / "state.db"
    token = secrets.token_urlsafe(32)
    port = free_port()
    log_path = workdir / "coordinator.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_ADMIN_TOKEN": token}
    with log_path.open("ab") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "blockopt",
                "serve",
                "--port",
                str(port),
                "--store",
                f"sqlite://{db}",
                "--retain-finished",
                str(args.retain),
                "--lease-ttl",
                "3",
                "--round-deadline",
                "0.5",
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    soak = Soak(url, token, workdir, args.agents, args.task_seconds, random.Random(args.seed))
    samples: list[dict[str, float]] = []
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"the coordinator did not start: {log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        next_sample = t0
        next_kill = t0 + args.kill_every
        with soak.client() as c:
            for _ in range(args.concurrent):
                slot = soak.create(c)
                if slot is not None:
                    soak.slots.append(slot)
            while time.monotonic() < end:
                now = time.monotonic()
                if now >= next_sample:
                    samples.append(sample(server.pid, c, t0, db))
                    s = samples[-1]
                    print(
                        f"{s['t']:7.0f}s rss {s['rss_mb']:.1f} MB fds {s['open_fds']:.0f} "
                        f"asyncio {s['asyncio_tasks']:.0f} records {s['store_records']:.0f} "
                        f"held {s['tasks_held']:.0f} cached {s['cached_tasks']:.0f} db {s['db_mb']:.1f} MB; "
                        f"created {soak.created} kills {soak.kills}",
                        flush=True,
                    )
                    next_sample += args.sample
                if now >= next_kill:
                    soak.kill_one()
                    next_kill += args.kill_every
                soak.churn(c)
                if server.poll() is not None:
                    soak.unexpected.append(f"the coordinator exited with {server.returncode}")
                    break
                time.sleep(0.5)
    finally:
        for slot in soak.slots:
            soak.stop_fleet(slot)
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
    text = log_path.read_text(errors="replace")
    log_errors = [line for line in text.splitlines() if " ERROR " in line or line.startswith("Traceback")]
    errors = len(log_errors) + len(soak.unexpected) + soak.finished.get("failed", 0)
    result = {
        "command": "python -m benchmarks.soak " + " ".join(sys.argv[1:]),
        "minutes": round((samples[-1]["t"] if samples else 0) / 60, 1),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "tasks_created": soak.created,
        "tasks_finished": soak.finished,
        "fleet_kills": soak.kills,
        "errors": errors,
        "error_lines": log_errors[:20],
        "unexpected": soak.unexpected[:20],
        "slopes": slopes(samples, args.warmup),
        "samples": samples,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    plot(samples, args.warmup, args.out.with_suffix(".png"))
    print(
        f"\n{result['minutes']} min; tasks created {soak.created}, finished {soak.finished}, "
        f"fleet kills {soak.kills}, errors {errors}"
    )
    print(f"{'series':15} {'mean':>10} {'min':>10} {'max':>10} {'slope/h':>12} {'rel. over run':>14}")
    for name, s in result["slopes"].items():  # type: ignore[union-attr]
        print(
            f"{name:15} {s['mean']:10.2f} {s['min']:10.2f} {s['max']:10.2f} {s['per_hour']:12.3f} "
            f"{s['relative_over_run']:14.3f}"
        )
    print(f"wrote {args.out.with_suffix('.json')} and {args.out.with_suffix('.png')}")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
