"""The SQLite store against the shared Store contract, plus what only a file-backed store has to show."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from blockopt.testing.stores import TTL, StoreContract, head, proposal, spec
from coordinator import errors
from coordinator.settings import ServiceSettings
from coordinator.store import make_store, store_option
from coordinator.store.base import Store
from coordinator.store.sqlite import SQLiteStore
from tests.conftest import ADMIN, REPO

T0 = 1_000_000.0


class TestSQLiteStore(StoreContract):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Store]:
        s = SQLiteStore(tmp_path / "state.db")
        yield s
        await s.close()


def test_store_urls() -> None:
    assert store_option("sqlite:///var/lib/blockopt/state.db") == {
        "store": "sqlite",
        "sqlite_path": "/var/lib/blockopt/state.db",
    }
    with pytest.raises(errors.InvalidRequest, match="needs a file"):
        store_option("sqlite://")
    with pytest.raises(errors.InvalidRequest, match="does not exist"):
        SQLiteStore("/no/such/dir/state.db")


@pytest.mark.anyio
async def test_file_is_in_wal_mode_and_survives_a_reopen(tmp_path: Path) -> None:
    """An acknowledged proposal is in the file: a second store opened on it (a restarted coordinator) sees it."""
    path = tmp_path / "state.db"
    first = make_store(ServiceSettings(**store_option(f"sqlite://{path}")))  # type: ignore[arg-type]
    await first.create_task(spec(), head())
    lease = await first.acquire_lease("t-1", "a-1", 0, TTL, T0)
    assert lease is not None
    await first.enqueue_proposal("t-1", lease.id, proposal("p1", lease.block), T0)
    # no close(): the process is killed, the file is what is left
    second = SQLiteStore(path)
    assert [q.proposal.id for q in await second.pending_proposals("t-1")] == ["p1"]
    assert (await second.counters("t-1"))["received"] == 1
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    await second.close()
    await first.close()


@pytest.mark.anyio
async def test_a_writer_held_past_the_timeout_is_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path, busy_timeout=0.2)
    await store.create_task(spec(), head())
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(errors.StoreUnavailable) as caught:
            await store.acquire_lease("t-1", "a-1", 0, TTL, T0)
        assert caught.value.status == 503 and caught.value.code == "store_unavailable"
        assert (await store.get_head("t-1")).version == 0  # readers are not blocked by the writer (WAL)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert await store.acquire_lease("t-1", "a-1", 0, TTL, T0) is not None
    await store.close()


def _commit_race(path: str, owner: str, attempts: int, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """A round runner in its own process: take the lock, commit on the head it read, count its successes."""
    import asyncio

    from coordinator.store.base import Commit, TaskRuntime

    async def race() -> int:
        store = SQLiteStore(path)
        won = 0
        for _ in range(attempts):
            fence = await store.acquire_round_lock(
                "t-1", owner, 0.001, T0 + 10
            )  # TTL lapses at once: all race
            current = await store.get_head("t-1")
            if fence is None:
                continue
            try:
                await store.commit(
                    "t-1",
                    Commit(
                        expected_version=current.version,
                        fence=fence,
                        runtime=TaskRuntime(round=current.version + 1),
                        head=head(current.version + 1),
                        counters={"commits": 1},
                    ),
                )
                won += 1
            except (errors.StaleFence, errors.VersionConflict):
                pass
        await store.close()
        return won

    results.put(asyncio.run(race()))


@pytest.mark.anyio
async def test_commits_from_several_processes_are_version_checked(tmp_path: Path) -> None:
    """Four processes race commits on one file: the head's version equals the number of commits that
    reported success (a lost update or a double apply would break the equality)."""
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    await store.create_task(spec(), head())
    ctx = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_commit_race, args=(str(path), f"r{i}", 40, results)) for i in range(4)]
    for p in procs:
        p.start()
    won = sum(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
    assert won > 0
    assert (await store.get_head("t-1")).version == won
    assert (await store.counters("t-1"))["commits"] == won
    await store.close()


def _blockopt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "blockopt", *args], capture_output=True, text=True, timeout=300, env=env
    )


@pytest.mark.slow  # a whole service run with agent processes
@pytest.mark.anyio
async def test_blockopt_run_keeps_its_books_in_a_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    done = _blockopt(
        "run",
        "quadratic",
        "--blocks",
        "4",
        "--dim",
        "2",
        "--agents",
        "2",
        "--processes",
        "1",
        "--max-rounds",
        "200",
        "--quiet",
        "--store",
        f"sqlite://{path}",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    store = SQLiteStore(path)
    (task,) = await store.list_tasks()
    runtime = await store.get_runtime(task.id)
    assert runtime.status == "optimal" and runtime.round > 0
    assert len(await store.rounds(task.id)) == runtime.round
    await store.close()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "quadratic", "--store", "sqlite://"], "needs a file"),
        (["run", "quadratic", "--inproc", "--store", "sqlite:///tmp/x.db"], "--inproc keeps no store"),
        (["run", "quadratic", "--store", "mysql://db"], "--store must be"),
        (["serve", "--store", "sqlite:///no/such/dir/state.db"], "does not exist"),
    ],
)
def test_bad_store_options_give_one_line_and_exit_2(args: list[str], needle: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "blockopt", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_ADMIN_TOKEN": ADMIN},
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr
