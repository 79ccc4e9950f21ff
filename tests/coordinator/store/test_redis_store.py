"""The Redis store: the shared Store contract (both commit shapes) plus what only Redis has to show.

Runs against the real Redis (REDIS_URL, default 127.0.0.1:6379), each test
under its own key prefix that is emptied (and SCAN-checked) at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from blockopt.testing.stores import StoreContract, head, proposal, record, spec, verdict
from coordinator import errors
from coordinator.store.base import Commit, RoundEntry, Store, TaskRuntime
from coordinator.store.redis import KeySpace, RedisStore
from coordinator.store.redis.commit import CommitMode
from tests.redis_support import new_prefix, require_redis

T0 = 1_000_000.0


async def _scan(store: RedisStore, prefix: str) -> list[str]:
    return [key async for key in store.r.scan_iter(match=f"{prefix}*", count=1000)]


async def _fresh(mode: CommitMode) -> AsyncIterator[RedisStore]:
    url = require_redis()
    prefix = new_prefix()
    store = RedisStore.from_url(url, prefix=prefix, commit_mode=mode)
    try:
        yield store
    finally:
        keys = await _scan(store, prefix)
        if keys:
            await store.r.delete(*keys)
        left = await _scan(store, prefix)
        await store.close()
        assert left == [], f"keys left under {prefix}: {left[:5]}"


class TestRedisStoreLua(StoreContract):
    @pytest.fixture
    async def store(self) -> AsyncIterator[Store]:
        async for s in _fresh("lua"):
            yield s


class TestRedisStoreWatch(StoreContract):
    @pytest.fixture
    async def store(self) -> AsyncIterator[Store]:
        async for s in _fresh("watch"):
            yield s


@pytest.fixture(params=["lua", "watch"])
async def rstore(request: pytest.FixtureRequest) -> AsyncIterator[RedisStore]:
    async for s in _fresh(request.param):
        await s.create_task(spec(), head())
        yield s


@pytest.mark.anyio
async def test_every_key_is_under_the_prefix(rstore: RedisStore) -> None:
    lease = await rstore.acquire_lease("t-1", "a-1", 0, 10.0, T0)
    assert lease is not None
    await rstore.enqueue_proposal("t-1", lease.id, proposal("p-1", lease.block), T0)
    keys = set(await _scan(rstore, rstore.keys.prefix))
    task_keys = set(vars(KeySpace(rstore.keys.prefix).task("t-1")).values())
    assert keys and keys <= task_keys | {rstore.keys.tasks}
    all_keys = {k async for k in rstore.r.scan_iter(match=f"{rstore.keys.prefix}*")}
    assert all_keys == keys


@pytest.mark.anyio
async def test_second_store_sees_the_first_ones_writes(rstore: RedisStore) -> None:
    """Two replicas = two clients on one Redis: an acknowledged proposal is visible to the other."""
    other = RedisStore.from_url(require_redis(), prefix=rstore.keys.prefix)
    try:
        lease = await rstore.acquire_lease("t-1", "a-1", 0, 10.0, T0)
        assert lease is not None
        await rstore.enqueue_proposal("t-1", lease.id, proposal("p-1", lease.block), T0)
        await rstore.close()  # the replica that acknowledged it "crashes"
        pending = await other.pending_proposals("t-1")
        assert [q.proposal.id for q in pending] == ["p-1"]
        fence = await other.acquire_round_lock("t-1", "replica-b", 5.0, T0)
        assert fence is not None
        await other.commit(
            "t-1",
            Commit(
                expected_version=0,
                fence=fence,
                runtime=TaskRuntime(round=1),
                verdicts=[verdict("p-1", lease.block)],
            ),
        )
        assert await other.pending_proposals("t-1") == []
        assert (await other.get_proposal("t-1", "p-1"))[1] is not None
    finally:
        await other.close()


@pytest.mark.anyio
async def test_paused_holder_cannot_commit_late(rstore: RedisStore) -> None:
    """The lock lapses while its holder is paused; another takes it; the late commit is refused by the fence."""
    late = await rstore.acquire_round_lock("t-1", "paused", 1.0, T0)
    assert late is not None
    assert await rstore.acquire_round_lock("t-1", "other", 1.0, T0 + 0.5) is None  # still held
    fresh = await rstore.acquire_round_lock("t-1", "other", 1.0, T0 + 1.5)
    assert fresh is not None and fresh > late
    entry = RoundEntry(record=record(0, 0, accepted=0), closed_at=T0)
    with pytest.raises(errors.StaleFence):
        await rstore.commit(
            "t-1", Commit(expected_version=0, fence=late, runtime=TaskRuntime(round=1), round=entry)
        )
    await rstore.commit(
        "t-1", Commit(expected_version=0, fence=fresh, runtime=TaskRuntime(round=1), round=entry)
    )
    assert [e.record.round for e in await rstore.rounds("t-1")] == [0]


@pytest.mark.anyio
async def test_concurrent_commits_one_wins(rstore: RedisStore) -> None:
    """Many commits race on one version under one fence: exactly one applies (atomic version check)."""
    fence = await rstore.acquire_round_lock("t-1", "r", 5.0, T0)
    assert fence is not None

    async def attempt(i: int) -> bool:
        try:
            await rstore.commit(
                "t-1",
                Commit(
                    expected_version=0,
                    fence=fence,
                    runtime=TaskRuntime(round=1),
                    head=head(1).model_copy(update={"objective": float(i)}),
                    counters={"commits": 1},
                ),
            )
            return True
        except errors.VersionConflict:
            return False

    won = await asyncio.gather(*(attempt(i) for i in range(20)))
    assert sum(won) == 1
    assert (await rstore.counters("t-1"))["commits"] == 1
    assert (await rstore.get_head("t-1")).version == 1


@pytest.mark.anyio
async def test_retried_commit_is_applied_once(rstore: RedisStore) -> None:
    """A commit whose reply was lost is re-sent by the client's retry with the same id: applied once."""
    fence = await rstore.acquire_round_lock("t-1", "r", 5.0, T0)
    assert fence is not None
    k = rstore.keys.task("t-1")
    from coordinator.store.redis.commit import CommitArgs

    args = CommitArgs(
        commit_id="c-1",
        fence=fence,
        expected_version=0,
        new_version=None,
        head_json="",
        runtime_body=TaskRuntime(round=1).model_dump_json(),
        runtime_end="",
        round_json=RoundEntry(record=record(0, 0, 0), closed_at=T0).model_dump_json(),
        verdicts=[],
        counters=[("rounds", 1.0)],
    )
    assert (await rstore._commit(k, args))[0] == "ok"
    assert (await rstore._commit(k, args))[0] == "ok"
    assert len(await rstore.rounds("t-1")) == 1
    assert (await rstore.counters("t-1"))["rounds"] == 1


@pytest.mark.anyio
async def test_unreachable_redis_is_unavailable() -> None:
    """A Redis that does not answer is a 503 (agents retry), not a 500."""
    store = RedisStore.from_url("redis://127.0.0.1:1/0", prefix=new_prefix(), retries=1)
    try:
        assert await store.ping() is False
        with pytest.raises(errors.Unavailable):
            await store.get_task("t-1")
    finally:
        await store.close()


@pytest.mark.anyio
async def test_queue_state_matches_the_records(rstore: RedisStore) -> None:
    """The counted read (one script) agrees with counting the records (the interface's default)."""
    assert await rstore.queue_state("t-1", T0) == await Store.queue_state(rstore, "t-1", T0)
    first = await rstore.acquire_lease("t-1", "a-1", 0, 10.0, T0)
    second = await rstore.acquire_lease("t-1", "a-2", 0, 5.0, T0)
    assert first is not None and second is not None
    await rstore.enqueue_proposal("t-1", first.id, proposal("p-1", first.block), T0 + 0.123456789)
    for now in (T0 + 1, T0 + 5, T0 + 6):
        got = await rstore.queue_state("t-1", now)
        assert got == await Store.queue_state(rstore, "t-1", now)
    assert got.pending == 1 and got.oldest == T0 + 0.123456789 and got.leases == 0
