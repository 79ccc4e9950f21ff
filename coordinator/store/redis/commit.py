"""The version-checked, fenced commit in two shapes: one Lua script, or WATCH/MULTI (arq's shape).

Both apply the same change under the same checks: the fencing token is the
current one and the round lock still carries it, the head is at the expected
version, and a new head increases it. ``benchmarks/stores.py redis`` measures
both; Lua is the default because it needs one round trip where WATCH/MULTI
needs six (WATCH, four reads, MULTI/EXEC) and restarts when a watched key moves (see
BENCHMARKS.md, "Stores: memory, SQLite, Redis").

A commit carries a random id, recorded with it: when the reply to an applied
commit is lost and the client retries, the retry is recognised and not applied
twice (a round that merged nothing would otherwise pass the version check again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError

from coordinator.store.redis import lua
from coordinator.store.redis.keys import TaskKeys

CommitMode = Literal["lua", "watch"]


@dataclass(frozen=True)
class CommitArgs:
    """A ``Commit`` flattened to strings, as both shapes write it."""

    commit_id: str
    fence: int
    expected_version: int
    new_version: int | None
    head_json: str
    runtime_body: str
    runtime_end: str
    round_json: str
    verdicts: list[tuple[str, str]]
    counters: list[tuple[str, float]]


class Committer(Protocol):
    async def __call__(self, k: TaskKeys, c: CommitArgs) -> list[str]:
        """``['ok']`` or ``[refusal, current value]`` (refusals as in ``lua.COMMIT``)."""
        ...


class LuaCommit:
    def __init__(self, r: Redis) -> None:
        self._script = r.register_script(lua.COMMIT)

    async def __call__(self, k: TaskKeys, c: CommitArgs) -> list[str]:
        keys = [
            k.fence,
            k.lock,
            k.head,
            k.runtime,
            k.pending,
            k.pending_block,
            k.verdicts,
            k.rounds,
            k.counters,
        ]
        args: list[str | int | float] = [
            c.commit_id,
            c.fence,
            c.expected_version,
            "" if c.new_version is None else c.new_version,
            c.head_json,
            c.runtime_body,
            c.runtime_end,
            c.round_json,
            len(c.verdicts),
        ]
        for pid, verdict in c.verdicts:
            args += [pid, verdict]
        for name, amount in c.counters:
            args += [name, amount]
        return list(await self._script(keys=keys, args=args))


class WatchCommit:
    """Read the checked values under WATCH, then write in MULTI/EXEC; retry when a watched key moved."""

    def __init__(self, r: Redis) -> None:
        self._r = r

    async def __call__(self, k: TaskKeys, c: CommitArgs) -> list[str]:
        async with self._r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(k.fence, k.lock, k.head, k.runtime)
                    version = await pipe.hget(k.head, "version")
                    if version is None:
                        return ["not_found"]
                    if await pipe.hget(k.runtime, "commit") == c.commit_id:
                        return ["ok"]
                    fence = str(await pipe.get(k.fence) or "0")
                    if fence != str(c.fence) or await pipe.hget(k.lock, "fence") != str(c.fence):
                        return ["stale_fence", fence]
                    if version != str(c.expected_version):
                        return ["version_conflict", str(version)]
                    if c.new_version is not None and c.new_version <= int(version):
                        return ["not_increasing", str(version)]
                    pipe.multi()
                    self._writes(pipe, k, c)
                    await pipe.execute()
                    return ["ok"]
                except WatchError:
                    continue

    @staticmethod
    def _writes(p: Pipeline, k: TaskKeys, c: CommitArgs) -> None:
        """Queue the writes (a pipeline in MULTI mode sends them at execute())."""
        if c.new_version is not None:
            p.hset(k.head, mapping={"version": c.new_version, "json": c.head_json})
        for pid, verdict in c.verdicts:
            p.hset(k.verdicts, pid, verdict)
            p.zrem(k.pending, pid)
            p.hdel(k.pending_block, pid)
        if c.round_json:
            p.rpush(k.rounds, c.round_json)
        p.hset(k.runtime, mapping={"body": c.runtime_body, "fence": c.fence, "commit": c.commit_id})
        if c.runtime_end:
            p.hsetnx(k.runtime, "end", c.runtime_end)
        for name, amount in c.counters:
            p.hincrbyfloat(k.counters, name, amount)


def committer(r: Redis, mode: CommitMode) -> Committer:
    return LuaCommit(r) if mode == "lua" else WatchCommit(r)
