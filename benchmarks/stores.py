"""The stores, side by side in one run so the ratios hold on a noisy machine.

``redis``: three measurements of the Redis store and its replicas:

1. the fenced, version-checked commit as one Lua script vs WATCH/MULTI, sequentially (latency) and from
   8 tasks at once (throughput);
2. lease + enqueue + commit cycles straight against the memory store and the Redis store (no HTTP), i.e.
   what the store itself costs;
3. real ``blockopt serve`` processes (memory; Redis x1; Redis x2) driven over HTTP by an asyncio load
   generator of N agents (lease -> heuristic proposal -> submit, spread round-robin over the replicas) for
   a fixed time; proposals/s = acknowledged submits per second.

``leases``: the memory store's leasing cost as blocks and agents grow. One round per size n: n agents each
lease a block, submit a proposal on it, and one commit gives every proposal its verdict. The store at
``--ref`` (by default 68a3b2c, main before the heap, which scanned every block, lease and queued proposal
on each lease: O(n^2) a round) is loaded from git and runs beside today's.

    .venv/bin/python -m benchmarks.stores redis [--seconds 15] [--agents 32] [--redis redis://127.0.0.1:6379/0]
    .venv/bin/python -m benchmarks.stores leases [--ref 68a3b2c] [--sizes 64 256 1024 4096]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from benchmarks.lib.cli import Parser, fail, write_json
from blockopt.testing.stores import head, proposal, spec, verdict  # the store contract's records
from coordinator.store.base import Commit, Store, TaskRuntime
from coordinator.store.memory import MemoryStore
from coordinator.store.redis import RedisStore
from coordinator.store.redis.commit import CommitMode
from tasks.registry import create_task

ROOT = Path(__file__).resolve().parent.parent

ADMIN = "bench-admin-token-0123456789"


# -- 1 and 2: straight against the stores -------------------------------------------------
async def _purge(store: RedisStore) -> None:
    keys = [k async for k in store.r.scan_iter(match=f"{store.keys.prefix}*", count=1000)]
    if keys:
        await store.r.delete(*keys)


async def commit_rate(url: str, mode: CommitMode, n: int, tasks: int) -> float:
    """Commits/s: ``tasks`` tasks each committing ``n // tasks`` head changes concurrently."""
    store = RedisStore.from_url(url, prefix=f"bench:{uuid.uuid4().hex[:8]}:", commit_mode=mode)
    try:
        ids = [f"t-{i}" for i in range(tasks)]
        for t in ids:
            await store.create_task(spec(t, blocks=8), head(0, blocks=8))

        async def run(t: str) -> None:
            fence = await store.acquire_round_lock(t, "bench", 60.0, time.time())
            assert fence is not None
            for v in range(n // tasks):
                await store.commit(
                    t,
                    Commit(
                        expected_version=v,
                        fence=fence,
                        runtime=TaskRuntime(round=v + 1),
                        head=head(v + 1, blocks=8),
                        counters={"rounds": 1},
                    ),
                )

        t0 = time.perf_counter()
        await asyncio.gather(*(run(t) for t in ids))
        return n / (time.perf_counter() - t0)
    finally:
        await _purge(store)
        await store.close()


async def store_cycle_rate(store: Store, cycles: int, blocks: int = 16) -> float:
    """Proposals/s through a store alone: acquire lease, enqueue, and a commit with verdicts every round."""
    await store.create_task(spec("t-1", blocks=blocks), head(0, blocks=blocks))
    fence = await store.acquire_round_lock("t-1", "bench", 3600.0, time.time())
    assert fence is not None
    version, done, t0 = 0, 0, time.perf_counter()
    while done < cycles:
        now = time.time()
        batch = []
        for a in range(blocks):
            lease = await store.acquire_lease("t-1", f"a-{a}", version, 30.0, now)
            assert lease is not None
            p = proposal(uuid.uuid4().hex, lease.block, agent=f"a-{a}", base=version)
            await store.enqueue_proposal("t-1", lease.id, p, now)
            batch.append(p)
        pending = await store.pending_proposals("t-1")
        await store.commit(
            "t-1",
            Commit(
                expected_version=version,
                fence=fence,
                runtime=TaskRuntime(round=version + 1),
                head=head(version + 1, blocks=blocks),
                verdicts=[verdict(q.proposal.id, q.proposal.block) for q in pending],
            ),
        )
        version += 1
        done += len(batch)
    return done / (time.perf_counter() - t0)


# -- 3: real coordinator processes over HTTP ---------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_replicas(
    store: str, count: int, prefix: str, logdir: Path
) -> list[tuple[subprocess.Popen[bytes], str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BLOCKOPT_ADMIN_TOKEN": ADMIN}
    out = []
    for i in range(count):
        port = free_port()
        log = (logdir / f"{store.split(':')[0]}-{count}-{i}.log").open("wb")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "blockopt",
                "serve",
                "--port",
                str(port),
                "--store",
                store,
                "--redis-prefix",
                prefix,
                "--log-level",
                "warning",
                "--round-deadline",
                "0.5",
                "--lease-ttl",
                "10",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        out.append((proc, f"http://127.0.0.1:{port}"))
    for proc, url in out:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"replica {url} did not start")
            time.sleep(0.1)
    return out


async def agent_loop(
    base: str, task: dict[str, Any], seed: int, until: float, acked: list[int], errors: list[int]
) -> None:
    """One agent: lease -> the task's heuristic proposal -> submit without waiting for the verdict."""
    async with httpx.AsyncClient(base_url=base, timeout=30) as c:
        for _attempt in range(5):
            try:
                r = await c.post(
                    f"/v1/tasks/{task['id']}/agents",
                    json={"name": f"bench{seed}"},
                    headers={"Authorization": f"Bearer {task['join_token']}"},
                )
                break
            except httpx.TransportError:
                errors[0] += 1
                await asyncio.sleep(0.2)
        r.raise_for_status()
        joined = r.json()
        c.headers["Authorization"] = f"Bearer {joined['token']}"
        model = create_task(joined["task"]["kind"], joined["task"]["params"])
        proposer = model.make_proposer(model.ProposerParams(), seed=seed)
        while time.monotonic() < until:
            try:
                await one_proposal(c, task, proposer, until, acked)
            except httpx.TransportError:
                errors[0] += 1


async def one_proposal(
    c: httpx.AsyncClient, task: dict[str, Any], proposer: Any, until: float, acked: list[int]
) -> None:
    r = await c.post(f"/v1/tasks/{task['id']}/leases")
    if r.status_code == 429:
        await asyncio.sleep(float(r.json()["error"].get("retry_after", 0.05)))
        return
    r.raise_for_status()
    lease = r.json()
    draft = proposer.propose(lease["contract"])
    body = {
        "id": uuid.uuid4().hex,
        "lease_id": lease["lease_id"],
        "block": lease["block"],
        "base_version": lease["version"],
        "value": draft.value if draft else None,
        "predicted_improvement": draft.predicted_improvement if draft else 0.0,
    }
    if draft is None:
        await c.delete(f"/v1/tasks/{task['id']}/leases/{lease['lease_id']}")
        return
    r = await c.post(f"/v1/tasks/{task['id']}/proposals", json=body, params={"wait": 0})
    if r.status_code in (200, 202) and time.monotonic() < until:
        acked[0] += 1


async def task_view(base: str, task_id: str) -> dict[str, Any]:
    """A fresh connection each time: a keep-alive connection idle for the whole run may have been closed."""
    for _ in range(5):
        try:
            async with httpx.AsyncClient(
                base_url=base, timeout=30, headers={"Authorization": f"Bearer {ADMIN}"}
            ) as c:  # reads are private
                return dict((await c.get(f"/v1/tasks/{task_id}")).json())
        except httpx.TransportError:
            await asyncio.sleep(0.2)
    raise RuntimeError("the coordinator does not answer")


async def service_rate(urls: list[str], agents: int, seconds: float, blocks: int) -> dict[str, float]:
    async with httpx.AsyncClient(
        base_url=urls[0], timeout=30, headers={"Authorization": f"Bearer {ADMIN}"}
    ) as admin:
        r = await admin.post(
            "/v1/tasks",
            json={
                "kind": "quadratic",
                "params": {"blocks": blocks, "dim": 4, "coupling": 0.3},
                "merge_policy": "independent",
                "budgets": {"rounds": 1_000_000},
                "stop": {"relative_gap": 0.0, "stall_rounds": 1_000_000},
            },
        )
        r.raise_for_status()
        task = r.json()
        acked, errors = [0], [0]
        warm_until = time.monotonic() + 3.0
        until = warm_until + seconds
        runners = asyncio.gather(
            *(agent_loop(urls[i % len(urls)], task, i, until, acked, errors) for i in range(agents))
        )
        await asyncio.sleep(max(0.0, warm_until - time.monotonic()))
        a0, v0, t0 = acked[0], await task_view(urls[0], task["id"]), time.monotonic()
        await runners
        t1 = time.monotonic()
        v1 = await task_view(urls[0], task["id"])
        return {
            "proposals_per_s": (acked[0] - a0) / (t1 - t0),
            "rounds_per_s": (v1["round"] - v0["round"]) / (t1 - t0),
            "transport_errors": errors[0],
        }


def stop_all(procs: list[tuple[subprocess.Popen[bytes], str]]) -> None:
    for proc, _ in procs:
        proc.terminate()
    for proc, _ in procs:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def purge_prefix(url: str, prefix: str) -> None:
    import redis

    with redis.Redis.from_url(url) as r:
        keys = list(r.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            r.delete(*keys)


def redis(args: argparse.Namespace) -> int:
    """Commit shapes, the store alone, and the service over HTTP (memory; Redis x1; Redis x2)."""

    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}")
    print("\n1. commit shapes (fenced, version-checked head change), commits/s, median of 3")
    for tasks in (1, 8):
        row = []
        for mode in ("lua", "watch"):
            rates = [asyncio.run(commit_rate(args.redis, mode, args.commits, tasks)) for _ in range(3)]
            row.append(statistics.median(rates))
            print(f"   {mode:<6} {tasks} task(s) at once: {row[-1]:8.0f} commits/s")
        print(f"   lua / watch: {row[0] / row[1]:.2f}x")

    print("\n2. store alone (lease + enqueue per proposal, one commit per 16), proposals/s, median of 3")
    mem = statistics.median(asyncio.run(store_cycle_rate(MemoryStore(), args.cycles)) for _ in range(3))

    async def redis_cycle() -> float:
        store = RedisStore.from_url(args.redis, prefix=f"bench:{uuid.uuid4().hex[:8]}:")
        try:
            return await store_cycle_rate(store, args.cycles)
        finally:
            await _purge(store)
            await store.close()

    red = statistics.median(asyncio.run(redis_cycle()) for _ in range(3))
    print(f"   memory {mem:9.0f}/s   redis {red:9.0f}/s   memory / redis: {mem / red:.1f}x")

    if args.skip_service:
        return 0
    print(
        f"\n3. service over HTTP: {args.agents} agents, quadratic n={args.blocks} d=4, {args.seconds:.0f}s "
        "after 3s warm-up, proposals/s (acknowledged submits)"
    )
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"blockopt-bench-{uuid.uuid4().hex[:6]}"
    logdir.mkdir(parents=True)
    for store, count in (("memory", 1), (args.redis, 1), (args.redis, 2)):
        prefix = f"bench:{uuid.uuid4().hex[:8]}:"
        procs = start_replicas(store, count, prefix, logdir)
        try:
            res = asyncio.run(service_rate([u for _, u in procs], args.agents, args.seconds, args.blocks))
        finally:
            stop_all(procs)
            if store != "memory":
                purge_prefix(args.redis, prefix)
        label = "memory x1" if store == "memory" else f"redis  x{count}"
        print(
            f"   {label}: {res['proposals_per_s']:7.1f} proposals/s, {res['rounds_per_s']:5.2f} rounds/s"
            f" ({res['transport_errors']:.0f} dropped connections)"
        )
    print(f"   (replica logs in {logdir})")
    return 0


# -- leases: the memory store at a git ref beside today's ---------------------------------
MOVED = {
    "coordinator.ledger": "coordinator.reports.ledger",
    "coordinator.records": "coordinator.engine.records",
}
"""Modules the old store imports that the layered tree keeps elsewhere."""


def main_store(ref: str) -> type[Store]:
    """The memory store class of ``ref``, loaded from ``git show`` beside today's."""
    shown = subprocess.run(
        ["git", "show", f"{ref}:coordinator/store/memory.py"], cwd=ROOT, capture_output=True, text=True
    )
    if shown.returncode != 0:
        why = shown.stderr.strip().splitlines()[-1]
        fail("stores leases", f"cannot read the memory store of {ref}: {why}")
    source = shown.stdout
    path = Path(tempfile.mkdtemp()) / "memory_main.py"
    path.write_text(source)
    loaded = importlib.util.spec_from_file_location("memory_main", path)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    sys.modules["memory_main"] = module  # dataclasses look their module up
    for old, new in MOVED.items():  # the old store's imports, on a tree where those modules moved
        try:
            importlib.import_module(old)
        except ImportError:
            sys.modules[old] = importlib.import_module(new)
    loaded.loader.exec_module(module)
    cls: type[Store] = module.MemoryStore
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:  # the Store protocol gained methods since ``ref``; this benchmark calls none of them
        cls = type(cls.__name__, (cls,), {name: _not_at_ref(name, ref) for name in missing})
    return cls


def _not_at_ref(name: str, ref: str) -> Any:
    async def absent(*_: Any, **__: Any) -> Any:
        raise NotImplementedError(f"the memory store of {ref} has no {name}")

    return absent


async def one_round(store: Store, n: int) -> float:
    """Seconds for n leases (the part that scanned), after which the round is submitted and committed."""
    await store.create_task(spec("t", blocks=n), head(blocks=n))
    t0 = time.perf_counter()
    leases = [await store.acquire_lease("t", f"a-{i}", 0, 60.0, 1.0) for i in range(n)]
    seconds = time.perf_counter() - t0
    assert all(lease is not None for lease in leases) and len({lease.block for lease in leases if lease}) == n
    for i, lease in enumerate(leases):
        assert lease is not None
        await store.enqueue_proposal("t", lease.id, proposal(f"p{i}", lease.block, agent=f"a-{i}"), 1.0)
    fence = await store.acquire_round_lock("t", "r", 60.0, 1.0)
    assert fence is not None
    verdicts = [verdict(f"p{i}", lease.block) for i, lease in enumerate(leases) if lease]
    await store.commit(
        "t", Commit(expected_version=0, fence=fence, runtime=TaskRuntime(round=1), verdicts=verdicts)
    )
    return seconds


def leases(args: argparse.Namespace) -> int:
    """One round of n leases per size, the store at ``--ref`` against today's, best of ``--repeats``."""
    old_cls = main_store(args.ref)
    rows: list[dict[str, Any]] = []
    print("| blocks = agents | main: ms per round of leases | heap: ms | main / heap |")
    print("|---:|---:|---:|---:|")
    for n in args.sizes:
        best: dict[str, float] = {}
        for _ in range(args.repeats):  # interleaved, best of repeats: the machine is shared
            for name, cls in (("main", old_cls), ("heap", MemoryStore)):
                s = asyncio.run(one_round(cls(), n))
                best[name] = min(best.get(name, float("inf")), s)
        rows.append({"n": n, "main_s": best["main"], "heap_s": best["heap"]})
        main_ms, heap_ms = best["main"] * 1e3, best["heap"] * 1e3
        print(f"| {n} | {main_ms:.1f} | {heap_ms:.1f} | {main_ms / heap_ms:.1f}x |", flush=True)
    write_json(args.out, {"ref": args.ref, "repeats": args.repeats, "rows": rows})
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="stores", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("redis", help="Lua vs WATCH commits, the store alone, the service over HTTP")
    r.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    r.add_argument("--commits", type=int, default=4000)
    r.add_argument("--cycles", type=int, default=4000)
    r.add_argument("--seconds", type=float, default=15.0)
    r.add_argument("--agents", type=int, default=32)
    r.add_argument("--blocks", type=int, default=64)
    r.add_argument("--skip-service", action="store_true")
    r.set_defaults(run=redis)
    le = sub.add_parser("leases", help="the memory store's leasing, a git ref's store beside today's")
    le.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 4096])
    le.add_argument("--repeats", type=int, default=3)
    le.add_argument("--ref", default="68a3b2c", help="git ref of the store to compare with")
    le.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "lease_scaling.json")
    le.set_defaults(run=leases)
    args = ap.parse_args(argv)
    counts = [*getattr(args, "sizes", []), getattr(args, "repeats", 1), getattr(args, "commits", 1),
              getattr(args, "cycles", 1), getattr(args, "agents", 1)]  # fmt: skip
    if min(counts) < 1:
        ap.error("sizes and counts want positive numbers")
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
