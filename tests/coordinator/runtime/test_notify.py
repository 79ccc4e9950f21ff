"""The wake-up bus between API and engine processes (coordinator/store/bus.py), on Redis and on SQLite,
and its wiring into an API process (coordinator/api/worker.py) and an engine process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from coordinator.api.worker import api_app
from coordinator.settings import ServiceSettings
from coordinator.store.bus import Bus, Channel, RedisBus, SQLiteBus
from tests.conftest import ADMIN
from tests.redis_support import new_prefix, redis_prefix, require_redis

__all__ = ["redis_prefix"]  # the fixture

pytestmark = pytest.mark.anyio


class Inbox:
    def __init__(self) -> None:
        self.got: list[tuple[Channel, str]] = []
        self.arrived = asyncio.Event()

    def __call__(self, channel: Channel, task_id: str) -> None:
        self.got.append((channel, task_id))
        self.arrived.set()

    async def wait(self, timeout: float = 5.0) -> list[tuple[Channel, str]]:
        await asyncio.wait_for(self.arrived.wait(), timeout)
        return self.got


BusFactory = Callable[[str], Bus]


@pytest.fixture(params=["redis", "sqlite"])
async def buses(request: Any, tmp_path: Path) -> AsyncIterator[Callable[[str], Bus]]:
    """Buses on one channel namespace ("a") or another ("b"): a Redis prefix or a SQLite file."""
    made: list[Bus] = []
    if request.param == "redis":
        url = require_redis()
        names = {"a": new_prefix(), "b": new_prefix()}

        def make(ns: str) -> Bus:
            made.append(RedisBus(url, names[ns]))
            return made[-1]
    else:

        def make(ns: str) -> Bus:
            made.append(SQLiteBus(tmp_path / f"{ns}.db", poll=0.01))
            return made[-1]

    yield make
    for bus in made:
        await bus.close()


async def test_a_message_reaches_a_subscriber_of_its_channel(buses: BusFactory) -> None:
    sub, pub, inbox = buses("a"), buses("a"), Inbox()
    await sub.start(inbox, ("changed",))
    await pub.publish("changed", "t-1")
    assert await inbox.wait() == [("changed", "t-1")]


async def test_other_channels_and_namespaces_are_not_delivered(buses: BusFactory) -> None:
    sub, same, other, inbox = buses("a"), buses("a"), buses("b"), Inbox()
    await sub.start(inbox, ("queued",))
    await same.publish("changed", "t-1")  # a channel it did not subscribe to
    await other.publish("queued", "t-2")  # another prefix / file
    await same.publish("queued", "t-3")  # the one it should get, sent last
    got = await inbox.wait()
    await asyncio.sleep(0.2)
    assert got == [("queued", "t-3")]


async def test_a_publisher_without_subscribers_is_fine(buses: BusFactory) -> None:
    await buses("a").publish("queued", "t-1")


async def test_sqlite_bus_prunes_its_log(tmp_path: Path) -> None:
    bus = SQLiteBus(tmp_path / "s.db", poll=0.01)
    bus.KEEP = 10
    for i in range(1000):
        bus._insert("queued", f"t-{i}")
    rows = bus._db.execute(f"SELECT COUNT(*) FROM {bus.TABLE}").fetchone()[0]
    await bus.close()
    assert rows <= 10


def _settings(prefix: str, **extra: Any) -> ServiceSettings:
    return ServiceSettings(
        admin_token=SecretStr(ADMIN), store="redis", redis_url=require_redis(), redis_prefix=prefix, **extra
    )


async def _in_lifespan(app: Any, body: Callable[[], Awaitable[None]]) -> None:
    async with app.router.lifespan_context(app):
        await body()


async def test_an_api_process_wakes_its_long_polls_on_a_changed_message(
    redis_prefix: tuple[str, str],
) -> None:
    _, prefix = redis_prefix
    app = api_app(_settings(prefix, engine_workers=1))
    service = app.state.service
    assert service.rounds_here is False

    async def body() -> None:
        assert not service.scheduling  # an API process of the split mode runs no scheduler
        mine, other = service.changed("t-1"), service.changed("t-2")
        engine = RedisBus(require_redis(), prefix)
        try:
            await engine.publish("changed", "t-1")
            await asyncio.wait_for(mine.wait(), 5.0)
        finally:
            await engine.close()
        assert not other.is_set()

    await _in_lifespan(app, body)


async def test_an_api_process_hands_rounds_to_the_engines(redis_prefix: tuple[str, str]) -> None:
    _, prefix = redis_prefix
    app = api_app(_settings(prefix, engine_workers=1))
    service, inbox = app.state.service, Inbox()
    engine = RedisBus(require_redis(), prefix)
    await engine.start(inbox, ("queued",))

    async def body() -> None:
        await service.rounds.maybe_close(
            "t-9"
        )  # would run a round in-process; here it only tells the engines
        assert await inbox.wait() == [("queued", "t-9")]

    try:
        await _in_lifespan(app, body)
    finally:
        await engine.close()


async def test_replicas_without_engines_keep_running_rounds(redis_prefix: tuple[str, str]) -> None:
    _, prefix = redis_prefix
    app = api_app(_settings(prefix, api_workers=2))
    service = app.state.service

    async def body() -> None:
        assert service.rounds_here and service.scheduling
        assert service.bus is not None  # still tells the other processes' long polls

    await _in_lifespan(app, body)


@pytest.mark.parametrize("told", [True, False])
async def test_an_engine_process_runs_a_round_when_told_not_at_its_tick(
    redis_prefix: tuple[str, str], told: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a scheduler tick of 1000 s the engine only runs a round because the bus told it a proposal
    was queued; the API process, which runs no round, gets the verdict through the bus too. Without the
    engine's bus (told=False) nothing closes the round."""
    import coordinator.runtime.engine_worker
    from coordinator.runtime.engine_worker import run_engine
    from coordinator.runtime.wire import CreateTask, JoinRequest, ProposalIn

    _, prefix = redis_prefix
    settings = _settings(prefix, engine_workers=1, tick=1000.0)
    app = api_app(settings)
    service = app.state.service
    stop = asyncio.Event()
    if not told:
        monkeypatch.setattr(coordinator.runtime.engine_worker, "make_bus", lambda settings: None)
    engine = asyncio.create_task(run_engine(settings, 0, stop))

    async def body() -> None:
        spec, join, _ = await service.create(CreateTask(kind="quadratic", params={"blocks": 1, "dim": 2}))
        await asyncio.sleep(0.5)  # the engine's one tick (at its start) has passed with nothing to do
        joined = await service.join(spec.id, join, JoinRequest())
        agent = await service.authenticate(spec.id, f"Bearer {joined.token}")
        grant = await service.lease(spec.id, agent)
        task, state, _ = await service.current(spec.id)
        proposer = task.make_proposer(task.ProposerParams())
        draft = proposer.propose(grant.contract)
        assert draft is not None
        proposal = ProposalIn.answering(grant, draft)
        view, decided = await service.submit(spec.id, agent, proposal, wait=8.0 if told else 1.5)
        if told:
            assert decided and view.status == "accepted", view
        else:
            assert not decided and view.status == "pending", view

    try:
        await _in_lifespan(app, body)
    finally:
        stop.set()
        await engine
