"""Cross-process wake-ups between the API tier and the round engine (split mode, ``blockopt serve
--engine-workers M``).

Two channels, both carrying a task id:

- ``queued`` (API → engine): a proposal was stored or a lease released; the engine checks whether a
  round is due now instead of at its next scheduler tick.
- ``changed`` (engine → API): a round committed or the task ended; the API wakes the long polls of that
  task at once instead of after their 1 s re-read.

The bus only shortens waits: nothing depends on a message arriving. A lost message (a dropped
connection, a subscriber that started late) costs at most one scheduler tick on the engine side and
one long-poll re-read (1 s) on the API side, because both still poll the store.

- Redis: pub/sub on ``{prefix}bus:queued`` and ``{prefix}bus:changed`` (no keys are written).
- SQLite: a change log table in the store's own file, written by the publisher and polled every
  ``poll`` seconds by each subscriber (SQLite has no push; the poll reads one index range).
- Memory: no bus; the in-process path needs none.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol

from redis.asyncio import Redis

from coordinator.cancelling import stop_tasks
from coordinator.settings import ServiceSettings

log = logging.getLogger("blockopt.notify")
Channel = Literal["queued", "changed"]
CHANNELS: tuple[Channel, ...] = ("queued", "changed")
Handler = Callable[[Channel, str], None]


class Bus(Protocol):
    """Publish a task id on a channel; deliver every message of the subscribed channels to a handler."""

    async def start(self, handler: Handler, channels: tuple[Channel, ...]) -> None: ...

    async def publish(self, channel: Channel, task_id: str) -> None: ...

    async def close(self) -> None: ...


class RedisBus:
    """Redis pub/sub: one publish per message, one subscriber connection per process."""

    def __init__(self, url: str, prefix: str) -> None:
        self.prefix = prefix
        self.r = Redis.from_url(url, decode_responses=True, socket_connect_timeout=2.0)
        self._listener: asyncio.Task[None] | None = None

    def channel(self, name: Channel) -> str:
        return f"{self.prefix}bus:{name}"

    async def start(self, handler: Handler, channels: tuple[Channel, ...]) -> None:
        if channels:
            ready = asyncio.Event()
            self._listener = asyncio.create_task(self._listen(handler, channels, ready), name="blockopt-bus")
            waiting = asyncio.create_task(ready.wait())
            await asyncio.wait({self._listener, waiting}, timeout=5.0, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()

    async def _listen(self, handler: Handler, channels: tuple[Channel, ...], ready: asyncio.Event) -> None:
        names = {self.channel(c): c for c in channels}
        while True:
            try:
                async with self.r.pubsub(ignore_subscribe_messages=True) as ps:
                    await ps.subscribe(*names)
                    ready.set()
                    async for message in ps.listen():
                        if message["type"] == "message":
                            handler(names[message["channel"]], message["data"])
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconnect; meanwhile the store polls cover what is missed
                log.warning("bus subscriber lost Redis (%s); reconnecting", type(exc).__name__)
                await asyncio.sleep(0.5)

    async def publish(self, channel: Channel, task_id: str) -> None:
        try:
            await self.r.publish(self.channel(channel), task_id)
        except Exception as exc:  # a wake-up, not state: never fail a request for it
            log.warning("bus publish failed (%s)", type(exc).__name__)

    async def close(self) -> None:
        await stop_tasks(self._listener)
        await self.r.aclose()


class SQLiteBus:
    """A change log in the store's SQLite file: ``INSERT`` to publish, a short poll to subscribe."""

    TABLE = "bus_events"
    KEEP = 10_000
    """Rows kept; older ones are pruned by the publisher (a subscriber further behind loses nothing that
    matters: it re-reads the store on its own schedule anyway)."""

    def __init__(self, path: str | Path, poll: float) -> None:
        self.path = str(path)
        self.poll = poll
        self._db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # wake-ups: no fsync per message (WAL stays intact)
        self._db.execute(
            f"CREATE TABLE IF NOT EXISTS {self.TABLE} "
            "(id INTEGER PRIMARY KEY AUTOINCREMENT, channel TEXT NOT NULL, task TEXT NOT NULL)"
        )
        self._lock = threading.Lock()
        self._published = 0
        self._poller: asyncio.Task[None] | None = None

    def _last_id(self) -> int:
        with self._lock:
            row = self._db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {self.TABLE}").fetchone()
        return int(row[0])

    async def start(self, handler: Handler, channels: tuple[Channel, ...]) -> None:
        if channels:
            since = await asyncio.to_thread(self._last_id)
            self._poller = asyncio.create_task(self._poll(handler, set(channels), since), name="blockopt-bus")

    def _read(self, since: int) -> list[tuple[int, str, str]]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, channel, task FROM {self.TABLE} WHERE id > ? ORDER BY id", (since,)
            ).fetchall()
        return [(int(i), str(c), str(t)) for i, c, t in rows]

    async def _poll(self, handler: Handler, channels: set[Channel], since: int) -> None:
        while True:
            try:
                rows = await asyncio.to_thread(self._read, since)
            except sqlite3.Error as exc:
                log.warning("bus poll failed: %s", exc)
                rows = []
            seen: set[tuple[str, str]] = set()
            for row_id, name, task in rows:
                since = row_id
                channel = next((c for c in channels if c == name), None)
                if channel is not None and (channel, task) not in seen:
                    seen.add((channel, task))
                    handler(channel, task)
            await asyncio.sleep(self.poll)

    def _insert(self, channel: Channel, task_id: str) -> None:
        with self._lock:
            cur = self._db.execute(
                f"INSERT INTO {self.TABLE} (channel, task) VALUES (?, ?)", (channel, task_id)
            )
            self._published += 1
            if self._published % 1000 == 0 and cur.lastrowid is not None:
                self._db.execute(f"DELETE FROM {self.TABLE} WHERE id <= ?", (cur.lastrowid - self.KEEP,))

    async def publish(self, channel: Channel, task_id: str) -> None:
        try:
            await asyncio.to_thread(self._insert, channel, task_id)
        except sqlite3.Error as exc:
            log.warning("bus publish failed: %s", exc)

    async def close(self) -> None:
        await stop_tasks(self._poller)
        with self._lock:
            self._db.close()


def make_bus(settings: ServiceSettings) -> Bus | None:
    """The bus of the settings' store (None for memory: one process, nothing to tell)."""
    if settings.store == "redis":
        return RedisBus(settings.redis_url, settings.redis_prefix)
    if settings.store == "sqlite" and settings.sqlite_path is not None:
        return SQLiteBus(settings.sqlite_path, settings.notify_poll)
    return None
