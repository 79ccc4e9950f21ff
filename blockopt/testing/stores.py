"""The Store contract: every store implementation passes these (memory here; Redis reuses them).

Use: subclass ``StoreContract`` in a test module and give it a ``store``
fixture returning a fresh, empty store::

    class TestRedisStore(StoreContract):
        @pytest.fixture
        async def store(self): ...

Time is driven explicitly (``now``), as the interface passes it in.

One job over 400 lines: the one contract every store passes, one test per rule.
"""

from __future__ import annotations

from typing import Any

import pytest

from coordinator import errors
from coordinator.engine.records import Proposal, RoundRecord, Usage, Verdict
from coordinator.status import TaskStatus
from coordinator.store.base import (
    AbandonedLease,
    AgentRecord,
    Budgets,
    Commit,
    Head,
    RoundEntry,
    Store,
    TaskRuntime,
    TaskSpec,
)

T0 = 1_000_000.0
TTL = 10.0


def spec(task_id: str = "t-1", blocks: int = 3) -> TaskSpec:
    return TaskSpec(
        id=task_id,
        kind="quadratic",
        name="q",
        n_blocks=blocks,
        params={"blocks": blocks, "dim": 2},
        merge_policy="checked",
        mode="rounds",
        budgets=Budgets(rounds=10),
        proposer={"name": "heuristic"},
        reference=-1.0,
        reference_kind="optimum",
        initial_objective=0.0,
        tolerance=1e-12,
        window=3,
        stop_relative_gap=1e-10,
        stop_stall_rounds=3,
        join_token_hash="h" * 64,
        created_at=T0,
    )


def head(version: int = 0, blocks: int = 3, objective: float = 0.0) -> Head:
    return Head(
        version=version,
        objective=objective,
        block_versions=[version] * blocks,
        state={"x": [float(version)] * (2 * blocks)},
    )


def proposal(pid: str, block: int, agent: str = "a-1", base: int = 0, tokens: int = 0) -> Proposal:
    return Proposal(
        id=pid,
        agent=agent,
        block=block,
        value=[1.0, 2.0],
        base_version=base,
        predicted_improvement=0.5,
        usage=Usage(prompt_tokens=tokens, calls=1, model="m"),
    )


def record(index: int, version: int, accepted: int = 1) -> RoundRecord:
    return RoundRecord(
        round=index,
        version=version,
        objective=-0.5,
        gap=0.5,
        proposals=1,
        accepted=accepted,
        interfering=0,
        merge_kind="independent" if accepted else "none",
        kappa=0.5,
        gamma=1.0,
        delta=0.0,
        rhs=0.5,
        held=True,
    )


def verdict(pid: str, block: int, status: Any = "accepted") -> Verdict:
    return Verdict(
        proposal_id=pid,
        block=block,
        status=status,
        code="merged" if status == "accepted" else "stale_base",
        reason="r",
    )


class StoreContract:
    store: Store  # provided by the subclass's fixture

    @pytest.fixture
    async def ready(self, store: Store) -> Store:
        await store.create_task(spec(), head())
        return store

    # -- tasks ----------------------------------------------------------------
    @pytest.mark.anyio
    async def test_task_roundtrip(self, ready: Store) -> None:
        got = await ready.get_task("t-1")
        assert got == spec()
        assert [s.id for s in await ready.list_tasks()] == ["t-1"]
        assert (await ready.get_head("t-1")) == head()
        assert (await ready.get_runtime("t-1")).status == "running"

    @pytest.mark.anyio
    async def test_unknown_task_is_not_found(self, store: Store) -> None:
        with pytest.raises(errors.NotFound):
            await store.get_task("nope")
        with pytest.raises(errors.NotFound):
            await store.get_head("nope")
        assert await store.agent_by_token("nope", "x") is None

    @pytest.mark.anyio
    async def test_duplicate_task_conflicts(self, ready: Store) -> None:
        with pytest.raises(errors.Conflict):
            await ready.create_task(spec(), head())

    @pytest.mark.anyio
    async def test_finish_once(self, ready: Store) -> None:
        assert await ready.finish("t-1", TaskStatus.STOPPED, "by test", T0 + 1)
        assert not await ready.finish("t-1", TaskStatus.OPTIMAL, "late", T0 + 2)
        rt = await ready.get_runtime("t-1")
        assert (rt.status, rt.reason, rt.finished_at) == ("stopped", "by test", T0 + 1)

    # -- round lock and commits -----------------------------------------------------
    @pytest.mark.anyio
    async def test_round_lock_fences(self, ready: Store) -> None:
        f1 = await ready.acquire_round_lock("t-1", "r1", 5.0, T0)
        assert f1 is not None
        assert await ready.acquire_round_lock("t-1", "r2", 5.0, T0 + 1) is None
        f2 = await ready.acquire_round_lock("t-1", "r2", 5.0, T0 + 6)  # r1's lock lapsed
        assert f2 is not None and f2 > f1
        stale = Commit(
            expected_version=0,
            fence=f1,
            runtime=TaskRuntime(round=1),
            head=head(1),
            round=RoundEntry(record=record(0, 1), closed_at=T0 + 7),
        )
        with pytest.raises(errors.StaleFence):
            await ready.commit("t-1", stale)
        assert (await ready.get_head("t-1")).version == 0
        assert await ready.rounds("t-1") == []
        await ready.commit(
            "t-1",
            Commit(
                expected_version=0,
                fence=f2,
                runtime=TaskRuntime(round=1),
                head=head(1),
                round=RoundEntry(record=record(0, 1), closed_at=T0 + 7),
            ),
        )
        assert (await ready.get_head("t-1")).version == 1
        await ready.release_round_lock("t-1", f2)
        assert await ready.acquire_round_lock("t-1", "r3", 5.0, T0 + 8) is not None

    @pytest.mark.anyio
    async def test_round_lock_renewal_keeps_it_only_for_its_holder(self, ready: Store) -> None:
        f1 = await ready.acquire_round_lock("t-1", "r1", 5.0, T0)
        assert f1 is not None
        assert await ready.renew_round_lock("t-1", f1, 5.0, T0 + 4)  # a long round, still renewing
        assert (
            await ready.acquire_round_lock("t-1", "r2", 5.0, T0 + 6) is None
        )  # past the first TTL: still held
        f2 = await ready.acquire_round_lock("t-1", "r2", 5.0, T0 + 10)  # the renewals stopped (died, paused)
        assert f2 is not None
        assert not await ready.renew_round_lock("t-1", f1, 5.0, T0 + 11)  # woke up: it has lost the lock
        assert await ready.acquire_round_lock("t-1", "r1", 5.0, T0 + 12) is None  # and r2's hold is untouched

    # -- round runners ---------------------------------------------------------------
    @pytest.mark.anyio
    async def test_engine_heartbeats_list_the_live_runners(self, store: Store) -> None:
        assert await store.engine_heartbeat("r2", T0, 3.0) == ["r2"]
        assert await store.engine_heartbeat("r1", T0 + 1, 3.0) == ["r1", "r2"]
        assert await store.engine_heartbeat("r2", T0 + 2, 3.0) == ["r1", "r2"]  # r2 renewed to T0 + 5
        assert await store.engine_heartbeat("r2", T0 + 4.5, 3.0) == ["r2"]  # r1's beat lapsed at T0 + 4
        assert await store.engine_heartbeat("r1", T0 + 5, 3.0) == ["r1", "r2"]  # back: a new beat
        await store.engine_leave("r2")
        assert await store.engine_heartbeat("r1", T0 + 5.5, 3.0) == ["r1"]
        await store.engine_leave("r1")
        await store.engine_leave("r1")  # leaving twice is harmless

    @pytest.mark.anyio
    async def test_commit_is_version_checked_and_atomic(self, ready: Store) -> None:
        lease = await ready.acquire_lease("t-1", "a-1", 0, TTL, T0)
        assert lease is not None
        await ready.enqueue_proposal("t-1", lease.id, proposal("p1", lease.block), T0)
        fence = await ready.acquire_round_lock("t-1", "r", 30.0, T0)
        assert fence is not None
        bad = Commit(
            expected_version=5,
            fence=fence,
            runtime=TaskRuntime(round=1),
            head=head(6),
            verdicts=[verdict("p1", lease.block)],
            round=RoundEntry(record=record(0, 6), closed_at=T0),
            counters={"accepted": 1},
        )
        with pytest.raises(errors.VersionConflict):
            await ready.commit("t-1", bad)
        assert [q.proposal.id for q in await ready.pending_proposals("t-1")] == ["p1"]
        assert (await ready.get_proposal("t-1", "p1"))[1] is None
        assert (await ready.counters("t-1")).get("accepted", 0) == 0
        assert (await ready.get_runtime("t-1")).round == 0
        good = Commit(
            expected_version=0,
            fence=fence,
            runtime=TaskRuntime(round=1, stalled=0),
            head=head(1),
            verdicts=[verdict("p1", lease.block)],
            round=RoundEntry(record=record(0, 1), closed_at=T0),
            counters={"accepted": 1, "rounds": 1},
        )
        await ready.commit("t-1", good)
        assert await ready.pending_proposals("t-1") == [] and await ready.pending_blocks("t-1") == []
        queued, v = await ready.get_proposal("t-1", "p1")
        assert v is not None and v.status == "accepted" and queued.proposal.block == lease.block
        assert (await ready.counters("t-1"))["accepted"] == 1
        assert [r.record.round for r in await ready.rounds("t-1")] == [0]
        assert (await ready.get_runtime("t-1")).round == 1
        assert (await ready.get_head("t-1")) == head(1)

    @pytest.mark.anyio
    async def test_commit_without_head_keeps_version(self, ready: Store) -> None:
        fence = await ready.acquire_round_lock("t-1", "r", 30.0, T0)
        assert fence is not None
        await ready.commit(
            "t-1",
            Commit(
                expected_version=0,
                fence=fence,
                runtime=TaskRuntime(round=1, stalled=1),
                round=RoundEntry(record=record(0, 0, accepted=0), closed_at=T0),
                counters={"rounds": 1},
            ),
        )
        await ready.commit(
            "t-1",
            Commit(
                expected_version=0,
                fence=fence,
                runtime=TaskRuntime(round=2, stalled=2),
                round=RoundEntry(record=record(1, 0, accepted=0), closed_at=T0),
                counters={"rounds": 1},
            ),
        )
        assert (await ready.get_head("t-1")).version == 0
        assert (await ready.counters("t-1"))["rounds"] == 2
        assert [r.record.round for r in await ready.rounds("t-1", since=1)] == [1]
        assert (await ready.get_runtime("t-1")).stalled == 2

    @pytest.mark.anyio
    async def test_runtime_and_version_agree_with_the_full_reads(self, ready: Store) -> None:
        async def agree() -> tuple[TaskRuntime, int]:
            got = await ready.runtime_and_version("t-1")
            assert got == (await ready.get_runtime("t-1"), (await ready.get_head("t-1")).version)
            return got

        assert await agree() == (TaskRuntime(), 0)
        fence = await ready.acquire_round_lock("t-1", "r", 30.0, T0)
        assert fence is not None
        await ready.commit(
            "t-1",
            Commit(
                expected_version=0,
                fence=fence,
                runtime=TaskRuntime(round=1, stalled=0),
                head=head(4),
                round=RoundEntry(record=record(0, 4), closed_at=T0),
            ),
        )
        runtime, version = await agree()
        assert (runtime.round, version) == (1, 4)
        await ready.finish("t-1", TaskStatus.STOPPED, "by test", T0 + 1)
        runtime, version = await agree()
        assert (runtime.status, version) == ("stopped", 4)
        with pytest.raises(errors.NotFound):
            await ready.runtime_and_version("nope")

    @pytest.mark.anyio
    async def test_commit_after_finish_keeps_terminal_status(self, ready: Store) -> None:
        fence = await ready.acquire_round_lock("t-1", "r", 30.0, T0)
        assert fence is not None
        await ready.finish("t-1", TaskStatus.STOPPED, "by test", T0)
        await ready.commit(
            "t-1",
            Commit(
                expected_version=0,
                fence=fence,
                runtime=TaskRuntime(round=1),
                round=RoundEntry(record=record(0, 0, 0), closed_at=T0),
            ),
        )
        assert (await ready.get_runtime("t-1")).status == "stopped"

    # -- agents -------------------------------------------------------------------------
    @pytest.mark.anyio
    async def test_agents(self, ready: Store) -> None:
        agent = AgentRecord(id="a-1", task_id="t-1", name="w", token_hash="d" * 64, joined_at=T0)
        await ready.add_agent(agent)
        assert await ready.agent_by_token("t-1", "d" * 64) == agent
        assert await ready.agent_by_token("t-1", "e" * 64) is None
        assert [a.id for a in await ready.list_agents("t-1")] == ["a-1"]

    # -- leases ---------------------------------------------------------------------------
    @pytest.mark.anyio
    async def test_leases_cover_blocks_once(self, ready: Store) -> None:
        leases = [await ready.acquire_lease("t-1", f"a-{i}", 0, TTL, T0) for i in range(3)]
        assert all(lease is not None for lease in leases)
        assert sorted(lease.block for lease in leases if lease) == [0, 1, 2]
        again = await ready.acquire_lease("t-1", "a-0", 0, TTL, T0)
        assert again is not None and leases[0] is not None and again.id == leases[0].id
        assert await ready.acquire_lease("t-1", "a-9", 0, TTL, T0) is None
        assert len(await ready.active_leases("t-1", T0)) == 3

    @pytest.mark.anyio
    async def test_lease_expiry_frees_the_block(self, ready: Store) -> None:
        first = await ready.acquire_lease("t-1", "a-1", 0, TTL, T0)
        assert first is not None
        assert await ready.expire_leases("t-1", T0 + TTL / 2) == []
        lapsed = await ready.expire_leases("t-1", T0 + TTL + 0.01)
        assert [lease.id for lease in lapsed] == [first.id]
        assert (await ready.counters("t-1"))["leases_expired"] == 1
        assert await ready.active_leases("t-1", T0 + TTL + 0.01) == []
        with pytest.raises(errors.LeaseExpired):
            await ready.renew_lease("t-1", first.id, "a-1", TTL, T0 + TTL + 0.02)

    @pytest.mark.anyio
    async def test_lapsed_block_is_leased_again(self, ready: Store) -> None:
        held = [await ready.acquire_lease("t-1", f"a-{i}", 0, TTL, T0) for i in range(3)]
        assert held[1] is not None
        await ready.renew_lease("t-1", held[0].id, "a-0", TTL, T0 + 8) if held[0] else None
        await ready.renew_lease("t-1", held[2].id, "a-2", TTL, T0 + 8) if held[2] else None
        again = await ready.acquire_lease("t-1", "a-new", 0, TTL, T0 + TTL + 1)
        assert again is not None and again.block == held[1].block

    @pytest.mark.anyio
    async def test_renew_and_release(self, ready: Store) -> None:
        lease = await ready.acquire_lease("t-1", "a-1", 0, TTL, T0)
        assert lease is not None
        renewed = await ready.renew_lease("t-1", lease.id, "a-1", TTL, T0 + 5)
        assert renewed.expires_at == T0 + 5 + TTL
        with pytest.raises(errors.Forbidden):
            await ready.renew_lease("t-1", lease.id, "a-2", TTL, T0 + 5)
        with pytest.raises(errors.Forbidden):
            await ready.release_lease("t-1", lease.id, "a-2")
        await ready.release_lease("t-1", lease.id, "a-1")
        assert await ready.active_leases("t-1", T0 + 6) == []
        await ready.release_lease("t-1", lease.id, "a-1")  # releasing twice is harmless

    @pytest.mark.anyio
    async def test_lease_takes_the_first_free_preferred_block(self, ready: Store) -> None:
        got = [await ready.acquire_lease("t-1", f"a-{i}", 0, TTL, T0, prefer=[2, 0]) for i in range(3)]
        assert [lease.block for lease in got if lease] == [2, 0, 1]  # block 1 unlisted: by lease order
        assert await ready.acquire_lease("t-1", "a-9", 0, TTL, T0, prefer=[1, 2, 0]) is None

    @pytest.mark.anyio
    async def test_lease_without_preference_is_least_recently_leased(self, ready: Store) -> None:
        """The check above can fail: with no preference (or out-of-range entries) the order is the old one."""
        got = [
            await ready.acquire_lease("t-1", f"a-{i}", 0, TTL, T0, prefer=[7, -1] if i else None)
            for i in range(3)
        ]
        assert [lease.block for lease in got if lease] == [0, 1, 2]
        assert got[0] is not None
        await ready.release_lease("t-1", got[0].id, "a-0")
        again = await ready.acquire_lease("t-1", "b", 0, TTL, T0, prefer=[])
        assert again is not None and again.block == 0  # the only free block

    @pytest.mark.anyio
    async def test_preferred_block_with_a_queued_proposal_is_skipped(self, ready: Store) -> None:
        lease = await ready.acquire_lease("t-1", "a-1", 0, TTL, T0, prefer=[1])
        assert lease is not None and lease.block == 1
        await ready.enqueue_proposal("t-1", lease.id, proposal("p1", 1), T0 + 1)
        other = await ready.acquire_lease("t-1", "a-2", 0, TTL, T0 + 1, prefer=[1, 2])
        assert other is not None and other.block == 2
        fence = await ready.acquire_round_lock("t-1", "r", 5.0, T0 + 1)
        assert fence is not None
        await ready.commit(
            "t-1",
            Commit(
                expected_version=0, fence=fence, runtime=TaskRuntime(round=1), verdicts=[verdict("p1", 1)]
            ),
        )
        back = await ready.acquire_lease("t-1", "a-3", 0, TTL, T0 + 2, prefer=[1, 0])
        assert back is not None and back.block == 1  # the verdict freed it

    @pytest.mark.anyio
    async def test_lease_order_matches_a_model_under_random_operations(self, store: Store) -> None:
        """Leases, releases, expiries and queued proposals in a seeded random order: every grant is the block
        a plain model picks (first free preferred, else least recently leased, ties to the lowest)."""
        import random

        n = 6
        await store.create_task(spec("t-m", blocks=n), head(blocks=n))
        rng = random.Random(5)
        last: dict[int, int] = {}
        seq = 0
        held: dict[str, tuple[str, int, float]] = {}  # agent -> (lease id, block, expires_at)
        queued: set[int] = set()
        pending_ids: dict[int, str] = {}
        now = T0
        fence = await store.acquire_round_lock("t-m", "r", 1e9, now)
        assert fence is not None
        for step in range(120):
            now += rng.choice([0.0, 0.5, 3.0])
            for agent, (_, _b, exp) in list(held.items()):
                if exp <= now:
                    del held[agent]
            op = rng.random()
            agent = f"a-{rng.randrange(8)}"
            if op < 0.5:
                prefer = rng.sample(range(n), rng.randrange(3)) if rng.random() < 0.5 else None
                got = await store.acquire_lease("t-m", agent, 0, TTL, now, prefer=prefer)
                if agent in held:
                    assert got is not None and got.id == held[agent][0]
                    continue
                busy = {b for _, b, _ in held.values()} | queued
                free = [b for b in range(n) if b not in busy]
                want = next((b for b in prefer or () if b in free), None)
                if want is None and free:
                    want = min(free, key=lambda b: (last.get(b, -1), b))
                assert (got.block if got else None) == want, f"step {step}"
                if got is not None:
                    seq += 1
                    last[got.block] = seq
                    held[agent] = (got.id, got.block, got.expires_at)
            elif op < 0.65 and agent in held:
                await store.release_lease("t-m", held.pop(agent)[0], agent)
            elif op < 0.85 and agent in held:
                lease_id, b, _ = held.pop(agent)
                await store.enqueue_proposal("t-m", lease_id, proposal(f"p{step}", b, agent=agent), now)
                queued.add(b)
                pending_ids[b] = f"p{step}"
            elif queued:
                b = rng.choice(sorted(queued))
                await store.commit(
                    "t-m",
                    Commit(
                        expected_version=0,
                        fence=fence,
                        runtime=TaskRuntime(round=step),
                        verdicts=[verdict(pending_ids.pop(b), b, "rejected")],
                    ),
                )
                queued.discard(b)

    @pytest.mark.anyio
    async def test_queue_state_is_the_full_recount_under_random_operations(self, store: Store) -> None:
        await queue_state_against_recount(store, skewed=False)

    # -- proposals --------------------------------------------------------------------------
    @pytest.mark.anyio
    async def test_enqueue_consumes_the_lease(self, ready: Store) -> None:
        lease = await ready.acquire_lease("t-1", "a-1", 0, TTL, T0)
        assert lease is not None
        queued, created = await ready.enqueue_proposal(
            "t-1", lease.id, proposal("p1", lease.block, tokens=7), T0 + 1
        )
        assert created and queued.received_at == T0 + 1
        assert await ready.active_leases("t-1", T0 + 1) == []
        blocks = set()
        for i in range(2):
            other = await ready.acquire_lease("t-1", f"b-{i}", 0, TTL, T0 + 1)
            assert other is not None
            blocks.add(other.block)
        assert lease.block not in blocks  # a block with a queued proposal is not leased again
        assert await ready.acquire_lease("t-1", "c", 0, TTL, T0 + 1) is None
        assert (await ready.counters("t-1"))["received"] == 1
        rows = await ready.usage("t-1")
        assert [(r.agent, r.model, r.usage.tokens, r.usage.calls) for r in rows] == [("a-1", "m", 7, 1)]

    @pytest.mark.anyio
    async def test_enqueue_is_idempotent(self, ready: Store) -> None:
        lease = await ready.acquire_lease("t-1", "a-1", 0, TTL, T0)
        assert lease is not None
        await ready.enqueue_proposal("t-1", lease.id, proposal("p1", lease.block), T0)
        again, created = await ready.enqueue_proposal("t-1", lease.id, proposal("p1", lease.block), T0 + 1)
        assert not created and again.received_at == T0
        assert len(await ready.pending_proposals("t-1")) == 1
        assert (await ready.counters("t-1"))["received"] == 1

    @pytest.mark.anyio
    async def test_enqueue_checks_the_lease(self, ready: Store) -> None:
        lease = await ready.acquire_lease("t-1", "a-1", 0, TTL, T0)
        assert lease is not None
        wrong = (lease.block + 1) % 3
        with pytest.raises(errors.WrongBlock):
            await ready.enqueue_proposal("t-1", lease.id, proposal("p1", wrong), T0)
        with pytest.raises(errors.Forbidden):
            await ready.enqueue_proposal("t-1", lease.id, proposal("p2", lease.block, agent="a-2"), T0)
        with pytest.raises(errors.LeaseExpired):
            await ready.enqueue_proposal("t-1", "no-such-lease", proposal("p3", lease.block), T0)
        with pytest.raises(errors.LeaseExpired):
            await ready.enqueue_proposal("t-1", lease.id, proposal("p4", lease.block), T0 + TTL + 1)
        assert await ready.pending_proposals("t-1") == []
        with pytest.raises(errors.NotFound):
            await ready.get_proposal("t-1", "p1")

    @pytest.mark.anyio
    async def test_pending_is_oldest_first(self, ready: Store) -> None:
        await _three_proposals(ready)
        pending = await ready.pending_proposals("t-1")
        assert [q.proposal.id for q in pending] == ["p0", "p1", "p2"]
        assert await ready.pending_blocks("t-1") == [q.proposal.block for q in pending]

    @pytest.mark.anyio
    async def test_proposal_log_is_in_arrival_order_with_verdicts(self, ready: Store) -> None:
        await _three_proposals(ready)
        fence = await ready.acquire_round_lock("t-1", "r", 30.0, T0)
        assert fence is not None
        p1 = (await ready.get_proposal("t-1", "p1"))[0].proposal
        await ready.commit(
            "t-1",
            Commit(
                expected_version=0,
                fence=fence,
                runtime=TaskRuntime(round=1),
                verdicts=[verdict("p1", p1.block, "rejected")],
            ),
        )
        log = await ready.proposal_log("t-1")
        assert [(q.proposal.id, v.status if v else None) for q, v in log] == [
            ("p0", None),
            ("p1", "rejected"),
            ("p2", None),
        ]

    @pytest.mark.anyio
    async def test_abandoned_lease_counts_its_usage_once(self, ready: Store) -> None:
        rec = AbandonedLease(
            id="x1",
            agent="a-1",
            block=0,
            base_version=0,
            outcome="failed",
            failure="malformed_json",
            reason="no JSON",
            usage=Usage(prompt_tokens=30, completion_tokens=12, calls=2, model="m"),
            at=T0,
        )
        assert await ready.record_abandoned("t-1", rec)
        assert not await ready.record_abandoned("t-1", rec)  # a retried report is not counted twice
        rows = await ready.usage("t-1")
        assert [(r.agent, r.model, r.usage.tokens, r.usage.calls) for r in rows] == [("a-1", "m", 42, 2)]
        assert [a.id for a in await ready.abandoned("t-1")] == ["x1"]
        counters = await ready.counters("t-1")
        assert counters["abandoned"] == 1 and counters["abandoned:malformed_json"] == 1
        with pytest.raises(errors.NotFound):
            await ready.record_abandoned("t-404", rec)

    @pytest.mark.anyio
    async def test_abandoned_since_reads_only_the_later_ones(self, ready: Store) -> None:
        """The scheduler reads the recent abandoned leases on every tick, recorded in any order."""
        for name, dt in (("late", 3.0), ("early", 1.0), ("middle", 2.0)):
            at = T0 + dt
            rec = AbandonedLease(id=name, agent="a-1", block=0, base_version=0, outcome="declined", at=at)
            assert await ready.record_abandoned("t-1", rec)
        assert [a.id for a in await ready.abandoned("t-1")] == ["early", "middle", "late"]
        assert [a.id for a in await ready.abandoned_since("t-1", T0 + 1.0)] == ["middle", "late"]
        assert [a.id for a in await ready.abandoned_since("t-1", T0 + 0.5)] == ["early", "middle", "late"]
        assert await ready.abandoned_since("t-1", T0 + 3.0) == []
        with pytest.raises(errors.NotFound):
            await ready.abandoned_since("t-404", T0)

    @pytest.mark.anyio
    async def test_records_are_copies(self, ready: Store) -> None:
        got = await ready.get_task("t-1")
        got.params["blocks"] = 99
        assert (await ready.get_task("t-1")).params["blocks"] == 3


async def _three_proposals(store: Store) -> None:
    """Agents a-0..a-2 each lease a block and submit p0..p2, one time unit apart."""
    for i in range(3):
        lease = await store.acquire_lease("t-1", f"a-{i}", 0, TTL, T0 + i)
        assert lease is not None
        await store.enqueue_proposal("t-1", lease.id, proposal(f"p{i}", lease.block, agent=f"a-{i}"), T0 + i)


async def queue_state_against_recount(store: Store, skewed: bool) -> None:
    """Whatever a store keeps to answer ``queue_state`` without reading every record (it runs on each
    submission), the answer is the recount from the records (``Store.queue_state``), after leases,
    renewals, releases, expiries, submissions and verdicts, read at any time, lapsed leases not yet
    dropped included. ``skewed``: some arrivals carry an earlier time than the one before (another
    replica's clock); the memory and SQLite stores still report the earliest, the Redis store reports the
    first arrival's time (its pending set is in arrival order), so the shared contract runs unskewed."""
    import random

    n = 5
    await store.create_task(spec("t-q", blocks=n), head(blocks=n))
    rng = random.Random(11)
    held: dict[str, tuple[str, int]] = {}  # agent -> (lease id, block), as last granted
    pending: dict[str, int] = {}  # proposal id -> block
    now = T0
    fence = await store.acquire_round_lock("t-q", "r", 1e9, now)
    assert fence is not None
    for step in range(400):
        now += rng.choice([0.0, 0.5, 4.0, 7.0])
        agent = f"a-{rng.randrange(7)}"
        op = rng.random()
        try:
            if op < 0.35:
                got = await store.acquire_lease("t-q", agent, 0, TTL, now)
                if got is not None:
                    held[agent] = (got.id, got.block)
            elif op < 0.45 and agent in held:
                await store.renew_lease("t-q", held[agent][0], agent, rng.choice([1.0, TTL, 3 * TTL]), now)
            elif op < 0.55 and agent in held:
                await store.release_lease("t-q", held.pop(agent)[0], agent)
            elif op < 0.8 and agent in held:
                lease_id, block = held.pop(agent)
                at = now - (rng.choice([0.0, 0.0, 3.0, 9.0]) if skewed else 0.0)
                await store.enqueue_proposal("t-q", lease_id, proposal(f"p{step}", block, agent=agent), at)
                pending[f"p{step}"] = block
            elif pending:
                done = rng.sample(sorted(pending), rng.randrange(1, len(pending) + 1))
                await store.commit(
                    "t-q",
                    Commit(
                        expected_version=0,
                        fence=fence,
                        runtime=TaskRuntime(round=step),
                        verdicts=[verdict(pid, pending.pop(pid), "rejected") for pid in done],
                    ),
                )
        except (errors.LeaseExpired, errors.Forbidden):
            held.pop(agent, None)  # it lapsed meanwhile (and may have been leased again)
        for later in (0.0, rng.choice([1.0, 6.0, 2 * TTL])):  # read now, and later than any call yet
            at = now + later
            assert await store.queue_state("t-q", at) == await Store.queue_state(store, "t-q", at), step
