"""The durable embedded store: one SQLite file (stdlib ``sqlite3``) in WAL mode.

For a single-node deployment that must survive ``kill -9``: every call is one
transaction, so an acknowledged proposal (``enqueue_proposal`` returned) is in
the file and a restarted coordinator on the same file resumes every running
task from its last commit.

- Writes start with ``BEGIN IMMEDIATE``: one writer at a time across every
  process and connection on the file (SQLite's own file lock), others wait up
  to ``busy_timeout`` and then get ``StoreUnavailable`` (503, agents retry).
- ``commit`` reads the fence and the head version inside that transaction and
  applies everything or nothing: the "change it only if unchanged" shape of a
  version-checked commit, as the Redis store's script does it.
- Records are stored as the models' JSON; the columns beside them are only what
  a query filters or orders on.

One job over 400 lines: one class implementing the whole ``Store`` interface over one SQLite file.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from coordinator import errors
from coordinator.engine.records import Proposal, UsageTotals, Verdict
from coordinator.status import TaskStatus
from coordinator.store.base import (
    TERMINAL,
    AbandonedLease,
    AgentRecord,
    Commit,
    Head,
    Lease,
    QueuedProposal,
    QueueState,
    RoundEntry,
    Store,
    TaskRuntime,
    TaskSpec,
    UsageRow,
)

Synchronous = Literal["full", "normal"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY, spec TEXT NOT NULL, head TEXT NOT NULL, version INTEGER NOT NULL,
    runtime TEXT NOT NULL, status TEXT NOT NULL, finished_at REAL,
    lock_owner TEXT, lock_fence INTEGER NOT NULL DEFAULT 0, lock_expires REAL NOT NULL DEFAULT 0,
    lease_seq INTEGER NOT NULL DEFAULT 0, created_seq INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    task_id TEXT NOT NULL, block INTEGER NOT NULL, id TEXT NOT NULL, agent TEXT NOT NULL, body TEXT NOT NULL,
    expires_at REAL NOT NULL, PRIMARY KEY (task_id, block)
);
CREATE INDEX IF NOT EXISTS leases_by_id ON leases (task_id, id);
CREATE TABLE IF NOT EXISTS lease_seq (
    task_id TEXT NOT NULL, block INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (task_id, block)
);
CREATE TABLE IF NOT EXISTS proposals (
    task_id TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, agent TEXT NOT NULL, block INTEGER NOT NULL,
    received_at REAL NOT NULL, body TEXT NOT NULL, pending INTEGER NOT NULL, verdict TEXT,
    PRIMARY KEY (task_id, id)
);
CREATE INDEX IF NOT EXISTS proposals_by_seq ON proposals (task_id, pending, seq);
CREATE TABLE IF NOT EXISTS rounds (
    task_id TEXT NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (task_id, idx)
);
CREATE TABLE IF NOT EXISTS counters (
    task_id TEXT NOT NULL, name TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (task_id, name)
);
CREATE TABLE IF NOT EXISTS usage (
    task_id TEXT NOT NULL, agent TEXT NOT NULL, model TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (task_id, agent, model)
);
CREATE TABLE IF NOT EXISTS abandoned (
    task_id TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (task_id, id)
);
CREATE TABLE IF NOT EXISTS agents (
    task_id TEXT NOT NULL, id TEXT NOT NULL, token_hash TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (task_id, id)
);
CREATE INDEX IF NOT EXISTS agents_by_token ON agents (task_id, token_hash);
CREATE TABLE IF NOT EXISTS engines (owner TEXT PRIMARY KEY, alive_until REAL NOT NULL);
"""
TABLES = ("tasks", "leases", "lease_seq", "proposals", "rounds", "counters", "usage", "abandoned", "agents")


def path_of_url(url: str) -> Path:
    """``sqlite:///abs/path.db`` or ``sqlite://rel/path.db`` -> the file's path (query string dropped)."""
    if not url.startswith("sqlite://"):
        raise errors.InvalidRequest(f"a sqlite store URL starts with sqlite://, not '{url}'", store=url)
    rest = url[len("sqlite://") :].split("?", 1)[0]
    if not rest or rest == "/":
        raise errors.InvalidRequest("the sqlite store needs a file: sqlite:///path/to/state.db", store=url)
    return Path(rest)


def _lease(raw: str) -> Lease:
    return Lease.model_validate_json(raw)


class SQLiteStore(Store):
    """Every Store call is one SQLite transaction on one connection (serialized by a thread lock)."""

    def __init__(
        self, path: str | Path, synchronous: Synchronous = "full", busy_timeout: float = 10.0
    ) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        if self.path.parent and not self.path.parent.exists():
            raise errors.InvalidRequest(
                f"the sqlite store's directory {self.path.parent} does not exist", store=str(self.path)
            )
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            with self._write() as db:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
        except sqlite3.Error as exc:
            raise errors.InvalidRequest(
                f"cannot open the sqlite store {self.path}: {exc}", store=str(self.path)
            ) from None

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        return cls(path_of_url(url))

    # -- transactions ----------------------------------------------------------
    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; the file lock is taken at BEGIN, so reads inside it are current."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise errors.StoreUnavailable(f"the sqlite store is busy: {exc}", retry_after=1.0) from None
            try:
                yield db
            except sqlite3.OperationalError as exc:
                db.execute("ROLLBACK")
                raise errors.StoreUnavailable(
                    f"the sqlite store failed a write: {exc}", retry_after=1.0
                ) from None
            except BaseException:
                db.execute("ROLLBACK")
                raise
            try:
                db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise errors.StoreUnavailable(
                    f"the sqlite store could not commit: {exc}", retry_after=1.0
                ) from None

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: a consistent snapshot of the file (WAL readers never block the writer)."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN")
                yield db
            except sqlite3.OperationalError as exc:
                raise errors.StoreUnavailable(
                    f"the sqlite store cannot be read: {exc}", retry_after=1.0
                ) from None
            finally:
                if db.in_transaction:
                    db.execute("COMMIT")

    @staticmethod
    def _task_row(db: sqlite3.Connection, task_id: str, columns: str) -> sqlite3.Row | tuple[Any, ...]:
        row = db.execute(f"SELECT {columns} FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise errors.NotFound(f"no task '{task_id}'", task_id=task_id)
        return row

    # -- tasks ------------------------------------------------------------
    async def create_task(self, spec: TaskSpec, head: Head) -> None:
        runtime = TaskRuntime()
        with self._write() as db:
            if db.execute("SELECT 1 FROM tasks WHERE id = ?", (spec.id,)).fetchone():
                raise errors.Conflict(f"task '{spec.id}' already exists", task_id=spec.id)
            seq = db.execute("SELECT COALESCE(MAX(created_seq), 0) + 1 FROM tasks").fetchone()[0]
            db.execute(
                "INSERT INTO tasks (id, spec, head, version, runtime, status, created_seq) VALUES (?,?,?,?,?,?,?)",
                (
                    spec.id,
                    spec.model_dump_json(),
                    head.model_dump_json(),
                    head.version,
                    runtime.model_dump_json(),
                    runtime.status,
                    seq,
                ),
            )

    async def get_task(self, task_id: str) -> TaskSpec:
        with self._read() as db:
            return TaskSpec.model_validate_json(self._task_row(db, task_id, "spec")[0])

    async def list_tasks(self) -> list[TaskSpec]:
        with self._read() as db:
            rows = db.execute("SELECT spec FROM tasks ORDER BY created_seq").fetchall()
        return [TaskSpec.model_validate_json(r[0]) for r in rows]

    async def task_ids(self) -> list[str]:
        with self._read() as db:
            return [r[0] for r in db.execute("SELECT id FROM tasks ORDER BY created_seq")]

    async def get_runtime(self, task_id: str) -> TaskRuntime:
        with self._read() as db:
            return TaskRuntime.model_validate_json(self._task_row(db, task_id, "runtime")[0])

    async def finish(self, task_id: str, status: TaskStatus, reason: str, now: float) -> bool:
        with self._write() as db:
            runtime = TaskRuntime.model_validate_json(self._task_row(db, task_id, "runtime")[0])
            if runtime.status in TERMINAL:
                return False
            runtime = runtime.model_copy(
                update={"status": TaskStatus(status), "reason": reason, "finished_at": now}
            )
            db.execute(
                "UPDATE tasks SET runtime = ?, status = ?, finished_at = ? WHERE id = ?",
                (runtime.model_dump_json(), status, now, task_id),
            )
            db.execute("DELETE FROM leases WHERE task_id = ?", (task_id,))
            return True

    async def get_head(self, task_id: str) -> Head:
        with self._read() as db:
            return Head.model_validate_json(self._task_row(db, task_id, "head")[0])

    async def delete_task(self, task_id: str) -> bool:
        with self._write() as db:
            gone = db.execute("DELETE FROM tasks WHERE id = ?", (task_id,)).rowcount > 0
            for table in TABLES[1:]:
                db.execute(f"DELETE FROM {table} WHERE task_id = ?", (task_id,))
            return gone

    async def record_count(self) -> int:
        with self._read() as db:
            return sum(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in TABLES)

    # -- rounds -------------------------------------------------------------
    async def acquire_round_lock(self, task_id: str, owner: str, ttl: float, now: float) -> int | None:
        with self._write() as db:
            held_by, fence, expires = self._task_row(db, task_id, "lock_owner, lock_fence, lock_expires")
            if held_by is not None and held_by != owner and expires > now:
                return None
            db.execute(
                "UPDATE tasks SET lock_owner = ?, lock_fence = ?, lock_expires = ? WHERE id = ?",
                (owner, fence + 1, now + ttl, task_id),
            )
            return int(fence) + 1

    async def renew_round_lock(self, task_id: str, fence: int, ttl: float, now: float) -> bool:
        with self._write() as db:
            held_by, current, _ = self._task_row(db, task_id, "lock_owner, lock_fence, lock_expires")
            if current != fence or held_by is None:
                return False
            db.execute("UPDATE tasks SET lock_expires = ? WHERE id = ?", (now + ttl, task_id))
            return True

    async def release_round_lock(self, task_id: str, fence: int) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE tasks SET lock_owner = NULL, lock_expires = 0 WHERE id = ? AND lock_fence = ?",
                (task_id, fence),
            )

    # -- engines ------------------------------------------------------------
    async def engine_heartbeat(self, owner: str, now: float, ttl: float) -> list[str]:
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO engines (owner, alive_until) VALUES (?, ?)", (owner, now + ttl)
            )
            db.execute("DELETE FROM engines WHERE alive_until <= ?", (now,))
            return [r[0] for r in db.execute("SELECT owner FROM engines ORDER BY owner")]

    async def engine_leave(self, owner: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM engines WHERE owner = ?", (owner,))

    async def commit(self, task_id: str, commit: Commit) -> None:
        with self._write() as db:
            held_by, fence, version, raw_runtime = self._task_row(
                db, task_id, "lock_owner, lock_fence, version, runtime"
            )
            if commit.fence != fence or held_by is None:
                raise errors.StaleFence(
                    f"fencing token {commit.fence} is stale (current {fence})", task_id=task_id
                )
            if version != commit.expected_version:
                raise errors.VersionConflict(
                    f"head is at version {version}, expected {commit.expected_version}",
                    task_id=task_id,
                    current_version=version,
                )
            if commit.head is not None:
                if commit.head.version <= version:
                    raise errors.VersionConflict("a commit must increase the version", task_id=task_id)
                db.execute(
                    "UPDATE tasks SET head = ?, version = ? WHERE id = ?",
                    (commit.head.model_dump_json(), commit.head.version, task_id),
                )
            for v in commit.verdicts:
                db.execute(
                    "UPDATE proposals SET verdict = ?, pending = 0 WHERE task_id = ? AND id = ?",
                    (v.model_dump_json(), task_id, v.proposal_id),
                )
            if commit.round is not None:
                idx = db.execute("SELECT COUNT(*) FROM rounds WHERE task_id = ?", (task_id,)).fetchone()[0]
                db.execute(
                    "INSERT INTO rounds (task_id, idx, body) VALUES (?,?,?)",
                    (task_id, idx, commit.round.model_dump_json()),
                )
            runtime = commit.runtime
            current = TaskRuntime.model_validate_json(raw_runtime)
            if current.status in TERMINAL:  # a stop landed meanwhile: keep it
                runtime = runtime.model_copy(
                    update={
                        "status": current.status,
                        "reason": current.reason,
                        "finished_at": current.finished_at,
                    }
                )
            db.execute(
                "UPDATE tasks SET runtime = ?, status = ?, finished_at = ? WHERE id = ?",
                (runtime.model_dump_json(), runtime.status, runtime.finished_at, task_id),
            )
            self._count(db, task_id, commit.counters)

    @staticmethod
    def _count(db: sqlite3.Connection, task_id: str, increments: dict[str, float]) -> None:
        db.executemany(
            "INSERT INTO counters (task_id, name, value) VALUES (?,?,?) "
            "ON CONFLICT (task_id, name) DO UPDATE SET value = value + excluded.value",
            [(task_id, name, float(value)) for name, value in increments.items()],
        )

    async def rounds(self, task_id: str, since: int = 0) -> list[RoundEntry]:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            rows = db.execute(
                "SELECT body FROM rounds WHERE task_id = ? AND idx >= ? ORDER BY idx", (task_id, since)
            ).fetchall()
        return [RoundEntry.model_validate_json(r[0]) for r in rows]

    async def counters(self, task_id: str) -> dict[str, float]:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            return {
                name: value
                for name, value in db.execute(
                    "SELECT name, value FROM counters WHERE task_id = ?", (task_id,)
                )
            }

    # -- agents -------------------------------------------------------------
    async def add_agent(self, agent: AgentRecord) -> None:
        with self._write() as db:
            self._task_row(db, agent.task_id, "1")
            seq = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM agents WHERE task_id = ?", (agent.task_id,)
            ).fetchone()[0]
            db.execute(
                "INSERT OR REPLACE INTO agents (task_id, id, token_hash, seq, body) VALUES (?,?,?,?,?)",
                (agent.task_id, agent.id, agent.token_hash, seq, agent.model_dump_json()),
            )

    async def agent_by_token(self, task_id: str, token_hash: str) -> AgentRecord | None:
        with self._read() as db:
            row = db.execute(
                "SELECT body FROM agents WHERE task_id = ? AND token_hash = ?", (task_id, token_hash)
            ).fetchone()
        return AgentRecord.model_validate_json(row[0]) if row else None

    async def list_agents(self, task_id: str) -> list[AgentRecord]:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            rows = db.execute("SELECT body FROM agents WHERE task_id = ? ORDER BY seq", (task_id,)).fetchall()
        return [AgentRecord.model_validate_json(r[0]) for r in rows]

    # -- leases ---------------------------------------------------------------
    def _expire(self, db: sqlite3.Connection, task_id: str, now: float) -> list[Lease]:
        lapsed = [
            _lease(r[0])
            for r in db.execute(
                "SELECT body FROM leases WHERE task_id = ? AND expires_at <= ? ORDER BY block", (task_id, now)
            )
        ]
        if lapsed:
            db.execute("DELETE FROM leases WHERE task_id = ? AND expires_at <= ?", (task_id, now))
            self._count(db, task_id, {"leases_expired": len(lapsed)})
        return lapsed

    async def acquire_lease(
        self,
        task_id: str,
        agent: str,
        version: int,
        ttl: float,
        now: float,
        prefer: Sequence[int] | None = None,
    ) -> Lease | None:
        with self._write() as db:
            spec_raw, seq = self._task_row(db, task_id, "spec, lease_seq")
            self._expire(db, task_id, now)
            mine = db.execute(
                "SELECT body FROM leases WHERE task_id = ? AND agent = ? LIMIT 1", (task_id, agent)
            ).fetchone()
            if mine:
                return _lease(mine[0])
            busy = {r[0] for r in db.execute("SELECT block FROM leases WHERE task_id = ?", (task_id,))}
            busy |= {
                r[0]
                for r in db.execute(
                    "SELECT block FROM proposals WHERE task_id = ? AND pending = 1", (task_id,)
                )
            }
            n_blocks = TaskSpec.model_validate_json(spec_raw).n_blocks
            free = [b for b in range(n_blocks) if b not in busy]
            if not free:
                return None
            free_set = set(free)
            block = next((b for b in prefer or () if b in free_set), None)
            if block is None:
                last = dict(
                    db.execute("SELECT block, seq FROM lease_seq WHERE task_id = ?", (task_id,)).fetchall()
                )
                block = min(free, key=lambda b: last.get(b, -1))  # least recently leased; ties: lowest block
            seq += 1
            db.execute("UPDATE tasks SET lease_seq = ? WHERE id = ?", (seq, task_id))
            db.execute(
                "INSERT OR REPLACE INTO lease_seq (task_id, block, seq) VALUES (?,?,?)", (task_id, block, seq)
            )
            lease = Lease.grant(task_id, block, agent, version, now, ttl)
            db.execute(
                "INSERT INTO leases (task_id, block, id, agent, body, expires_at) VALUES (?,?,?,?,?,?)",
                (task_id, block, lease.id, agent, lease.model_dump_json(), lease.expires_at),
            )
            self._count(db, task_id, {"leases_granted": 1})
            return lease

    def _find_lease(
        self, db: sqlite3.Connection, task_id: str, lease_id: str, agent: str, now: float
    ) -> Lease:
        self._expire(db, task_id, now)
        row = db.execute(
            "SELECT body FROM leases WHERE task_id = ? AND id = ?", (task_id, lease_id)
        ).fetchone()
        if row is None:
            raise errors.LeaseExpired(
                "the lease expired or was released; lease a block again", lease_id=lease_id
            )
        lease = _lease(row[0])
        if lease.agent != agent:
            raise errors.Forbidden("this lease belongs to another agent", lease_id=lease_id)
        return lease

    async def renew_lease(self, task_id: str, lease_id: str, agent: str, ttl: float, now: float) -> Lease:
        with self._write() as db:
            self._task_row(db, task_id, "1")
            lease = self._find_lease(db, task_id, lease_id, agent, now)
            lease = lease.model_copy(update={"expires_at": now + ttl})
            db.execute(
                "UPDATE leases SET body = ?, expires_at = ? WHERE task_id = ? AND block = ?",
                (lease.model_dump_json(), lease.expires_at, task_id, lease.block),
            )
            return lease

    async def release_lease(self, task_id: str, lease_id: str, agent: str) -> None:
        with self._write() as db:
            self._task_row(db, task_id, "1")
            row = db.execute(
                "SELECT agent FROM leases WHERE task_id = ? AND id = ?", (task_id, lease_id)
            ).fetchone()
            if row is None:
                return
            if row[0] != agent:
                raise errors.Forbidden("this lease belongs to another agent", lease_id=lease_id)
            db.execute("DELETE FROM leases WHERE task_id = ? AND id = ?", (task_id, lease_id))

    async def active_leases(self, task_id: str, now: float) -> list[Lease]:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            rows = db.execute(
                "SELECT body FROM leases WHERE task_id = ? AND expires_at > ? ORDER BY block", (task_id, now)
            ).fetchall()
        return [_lease(r[0]) for r in rows]

    async def expire_leases(self, task_id: str, now: float) -> list[Lease]:
        with self._write() as db:
            self._task_row(db, task_id, "1")
            return self._expire(db, task_id, now)

    # -- proposals --------------------------------------------------------------
    async def enqueue_proposal(
        self, task_id: str, lease_id: str, proposal: Proposal, now: float
    ) -> tuple[QueuedProposal, bool]:
        with self._write() as db:
            self._task_row(db, task_id, "1")
            known = db.execute(
                "SELECT agent, body FROM proposals WHERE task_id = ? AND id = ?", (task_id, proposal.id)
            ).fetchone()
            if known is not None:
                if known[0] != proposal.agent:
                    raise errors.Conflict("that proposal id is taken", proposal_id=proposal.id)
                return QueuedProposal.model_validate_json(known[1]), False
            lease = self._find_lease(db, task_id, lease_id, proposal.agent, now)
            if lease.block != proposal.block:
                raise errors.WrongBlock(
                    f"the lease is for block {lease.block}, not block {proposal.block}",
                    leased_block=lease.block,
                    block=proposal.block,
                )
            db.execute("DELETE FROM leases WHERE task_id = ? AND block = ?", (task_id, lease.block))
            queued = QueuedProposal(proposal=proposal, received_at=now)
            seq = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM proposals WHERE task_id = ?", (task_id,)
            ).fetchone()[0]
            db.execute(
                "INSERT INTO proposals (task_id, id, seq, agent, block, received_at, body, pending) "
                "VALUES (?,?,?,?,?,?,?,1)",
                (task_id, proposal.id, seq, proposal.agent, proposal.block, now, queued.model_dump_json()),
            )
            self._count(db, task_id, {"received": 1})
            self._add_usage(db, task_id, proposal.agent, proposal.usage)
            return QueuedProposal.model_validate_json(queued.model_dump_json()), True

    @staticmethod
    def _add_usage(db: sqlite3.Connection, task_id: str, agent: str, usage: Any) -> None:
        row = db.execute(
            "SELECT body FROM usage WHERE task_id = ? AND agent = ? AND model = ?",
            (task_id, agent, usage.model),
        ).fetchone()
        totals = UsageTotals.model_validate_json(row[0]) if row else UsageTotals()
        totals.add(usage)
        db.execute(
            "INSERT OR REPLACE INTO usage (task_id, agent, model, body) VALUES (?,?,?,?)",
            (task_id, agent, usage.model, totals.model_dump_json()),
        )

    def _pending(self, task_id: str, column: str) -> list[Any]:
        """``column`` of the task's proposals without a verdict, oldest first (``column``: ours, never input)."""
        with self._read() as db:
            self._task_row(db, task_id, "1")
            rows = db.execute(
                f"SELECT {column} FROM proposals WHERE task_id = ? AND pending = 1 ORDER BY seq", (task_id,)
            ).fetchall()
        return [r[0] for r in rows]

    async def pending_proposals(self, task_id: str) -> list[QueuedProposal]:
        return [QueuedProposal.model_validate_json(body) for body in self._pending(task_id, "body")]

    async def pending_blocks(self, task_id: str) -> list[int]:
        return [int(block) for block in self._pending(task_id, "block")]

    async def get_proposal(self, task_id: str, proposal_id: str) -> tuple[QueuedProposal, Verdict | None]:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            row = db.execute(
                "SELECT body, verdict FROM proposals WHERE task_id = ? AND id = ?", (task_id, proposal_id)
            ).fetchone()
        if row is None:
            raise errors.NotFound(f"no proposal '{proposal_id}' in this task", proposal_id=proposal_id)
        return QueuedProposal.model_validate_json(row[0]), (
            Verdict.model_validate_json(row[1]) if row[1] else None
        )

    async def queue_state(self, task_id: str, now: float) -> QueueState:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            pending, oldest = db.execute(
                "SELECT COUNT(*), MIN(received_at) FROM proposals WHERE task_id = ? AND pending = 1",
                (task_id,),
            ).fetchone()
            leases = db.execute(
                "SELECT COUNT(*) FROM leases WHERE task_id = ? AND expires_at > ?", (task_id, now)
            ).fetchone()[0]
        return QueueState(int(pending), oldest, int(leases))

    async def usage(self, task_id: str) -> list[UsageRow]:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            rows = db.execute(
                "SELECT agent, model, body FROM usage WHERE task_id = ? ORDER BY rowid", (task_id,)
            ).fetchall()
        return [UsageRow(agent=a, model=m, usage=UsageTotals.model_validate_json(b)) for a, m, b in rows]

    # -- trajectories -------------------------------------------------------------
    async def record_abandoned(self, task_id: str, record: AbandonedLease) -> bool:
        with self._write() as db:
            self._task_row(db, task_id, "1")
            if db.execute(
                "SELECT 1 FROM abandoned WHERE task_id = ? AND id = ?", (task_id, record.id)
            ).fetchone():
                return False
            seq = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM abandoned WHERE task_id = ?", (task_id,)
            ).fetchone()[0]
            db.execute(
                "INSERT INTO abandoned (task_id, id, seq, body) VALUES (?,?,?,?)",
                (task_id, record.id, seq, record.model_dump_json()),
            )
            self._add_usage(db, task_id, record.agent, record.usage)
            self._count(db, task_id, {"abandoned": 1, f"abandoned:{record.failure or record.outcome}": 1})
            return True

    async def proposal_log(self, task_id: str) -> list[tuple[QueuedProposal, Verdict | None]]:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            rows = db.execute(
                "SELECT body, verdict FROM proposals WHERE task_id = ? ORDER BY seq", (task_id,)
            ).fetchall()
        return [
            (QueuedProposal.model_validate_json(b), Verdict.model_validate_json(v) if v else None)
            for b, v in rows
        ]

    async def abandoned(self, task_id: str) -> list[AbandonedLease]:
        return await self.abandoned_since(task_id, -math.inf)

    async def abandoned_since(self, task_id: str, since: float) -> list[AbandonedLease]:
        with self._read() as db:
            self._task_row(db, task_id, "1")
            rows = db.execute(
                "SELECT body FROM abandoned WHERE task_id = ? AND json_extract(body, '$.at') > ?"
                " ORDER BY json_extract(body, '$.at'), seq",
                (task_id, since),
            ).fetchall()
        return [AbandonedLease.model_validate_json(r[0]) for r in rows]

    async def ping(self) -> bool:
        try:
            with self._read() as db:
                db.execute("SELECT 1").fetchone()
            return True
        except errors.BlockoptError:
            return False

    async def close(self) -> None:
        with self._lock:
            self._db.close()
