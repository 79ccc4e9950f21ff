"""Redis store and replicas: commit shapes, store calls, and end-to-end proposals/s.

Three measurements in one run, so the ratios are meaningful on a noisy machine:

1. ``commit``: the fenced, version-checked commit as one Lua script vs
   WATCH/MULTI, sequentially (latency) and from 8 tasks at once (throughput).
2. ``store``: lease + enqueue + commit cycles straight against the memory
   store and the Redis store (no HTTP), i.e. what the store itself costs.
3. ``service``: real ``blockopt serve`` processes (memory; Redis x1; Redis x2)
   driven over HTTP by an asyncio load generator of N agents (lease ->
   heuristic proposal -> submit, spread round-robin over the replicas) for a
   fixed time; proposals/s = acknowledged submits per second.

Usage: python benchmarks/redis_store.py [--seconds 15] [--agents 32] [--redis redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from coordinator.store.base import Commit, Store, TaskRuntime
from coordinator.store.memory import MemoryStore
from coordinator.store.redis import RedisStore
from coordinator.store.redis.commit import CommitMode
from tasks.registry import create_task

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from blockopt.testing.stores import head, proposal, spec, verdict  # noqa: E402  (reuse the contract's records)

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
    env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_ADMIN_TOKEN": ADMIN}
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
        for attempt in range(5):
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    ap.add_argument("--commits", type=int, default=4000)
    ap.add_argument("--cycles", type=int, default=4000)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--agents", type=int, default=32)
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--skip-service", action="store_true")
    args = ap.parse_args()

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
        return
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


if __name__ == "__main__":
    main()
