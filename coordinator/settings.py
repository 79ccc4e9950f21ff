"""Service settings: one pydantic model, built once at start-up and passed in.

Nothing below the CLI reads the environment; ``from_env`` is the one place
that does, so tests build settings directly and a replica's behaviour is
fully described by this object.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

StoreKind = Literal["memory", "sqlite", "redis"]

MIN_ADMIN_TOKEN = 24
PLACEHOLDERS = (
    "replace",
    "changeme",
    "change-me",
    "change_me",
    "s3cret",
    "secret",
    "password",
    "passw0rd",
    "example",
    "placeholder",
    "xxxx",
    "todo",
    "fixme",
    "dummy",
    "default",
    "admin-token-here",
)
"""Substrings (case-insensitive) that mark a token copied from a README or manifest rather than generated."""


def weak_token_reason(token: str) -> str | None:
    """Why ``token`` is too weak to guard task administration, or None when it looks generated."""
    if len(token) < MIN_ADMIN_TOKEN:
        return f"the admin token is {len(token)} characters; use at least {MIN_ADMIN_TOKEN} (openssl rand -hex 24)"
    lowered = token.lower()
    for word in PLACEHOLDERS:
        if word in lowered:
            return f"the admin token looks like a placeholder (contains '{word}'); generate one: openssl rand -hex 24"
    if len(set(token)) < 6:
        return "the admin token repeats a few characters; generate one: openssl rand -hex 24"
    return None


class ServiceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    admin_token: SecretStr | None = Field(
        None, description="bearer token for task administration; None refuses every admin call"
    )
    store: StoreKind = "memory"
    sqlite_path: str | None = Field(
        None, description="the SQLite file when store='sqlite' (WAL mode, durable)"
    )
    retain_finished: float | None = Field(
        None,
        gt=0,
        description="seconds a finished task is kept before it is deleted from the store; None keeps it",
    )
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="the shared Redis when store='redis'")
    redis_prefix: str = Field("blockopt:", min_length=1, description="every Redis key starts with this")
    redis_commit: Literal["lua", "watch"] = Field(
        "lua", description="commit as one Lua script or WATCH/MULTI"
    )
    redis_pool_size: int = Field(
        512,
        ge=1,
        description="Redis connections per process; a command waits for a free one when all are busy",
    )
    redis_pool_timeout: float = Field(
        20.0, gt=0, description="seconds a Redis command waits for a free connection before it is a 503"
    )
    round_lock_ttl: float = Field(
        5.0,
        gt=0,
        description="seconds a replica's round lock lives without renewal (renewed every third of it "
        "while a round runs); how long a task waits when the lock holder dies",
    )
    lease_ttl: float = Field(10.0, gt=0, description="seconds a lease lives without a renew")
    round_deadline: float = Field(
        2.0,
        gt=0,
        description="seconds after a round's first proposal at which it closes regardless of quorum",
    )
    quorum: float = Field(
        1.0, gt=0, le=1.0, description="fraction of leased blocks that must have submitted to close a round"
    )
    screen_exact_checks: int = Field(
        5,
        ge=1,
        description="kinds that screen (Screening.screen_change): exact evaluations per round at most (the merge "
        "the screen selected, then a best-first fallback)",
    )
    inline_step_ms: float = Field(
        1.0,
        ge=0,
        description="a task's engine step (a round, an arrival's score) whose last run took less than this "
        "runs on the event loop instead of a worker thread: the thread hop and the two threads' contention "
        "for the interpreter lock cost more than such a step; 0 always hops",
    )
    tick: float = Field(0.05, gt=0, description="scheduler period: lease expiry, deadlines, time budgets")
    max_body_bytes: int = Field(1 << 20, gt=0, description="request bodies above this get 413")
    rate_per_agent: float = Field(50.0, gt=0, description="sustained requests per second per agent")
    rate_burst: float = Field(100.0, gt=0, description="token-bucket burst per agent")
    default_max_rounds: int = Field(
        1000, ge=1, description="rounds budget of a task that sets neither rounds nor seconds"
    )
    max_wait: float = Field(10.0, ge=0, description="upper bound on long-poll waits (?wait=)")
    metrics_max_tasks: int = Field(50, ge=1, description="tasks exported with per-task labels")
    metrics_max_agents: int = Field(100, ge=1, description="agents exported by name; the rest as 'other'")
    retry_after: float = Field(0.2, gt=0, description="Retry-After hint when no block is free")
    prepare_wait: float = Field(
        1.0,
        ge=0,
        description="seconds POST /v1/tasks waits for the kind to prepare a task (reference, first plan) "
        "before answering with status 'preparing'; the preparation runs in a worker thread either way. "
        "A preparing task is known to the process preparing it only: with several API processes the "
        "answer waits until the task is stored",
    )
    prepare_retry_after: float = Field(
        1.0, gt=0, description="Retry-After hint to joins and leases of a task still preparing"
    )
    insecure_dev_token: bool = Field(
        False, description="accept a short or placeholder-looking admin token (local development only)"
    )
    public_read: bool = Field(
        False,
        description="anyone may read every task (status, solution, report, rounds, events, "
        "trajectories); by default reads need the admin token, the task's read token or "
        "an agent token of the task",
    )
    metrics_token: SecretStr | None = Field(
        None, description="bearer token /metrics requires; None leaves /metrics open"
    )
    api_workers: int = Field(
        1,
        ge=0,
        description="HTTP processes sharing the port (more than 1, or 0 for an engine-only node, needs "
        "a redis or sqlite store)",
    )
    engine_workers: int | None = Field(
        None,
        ge=0,
        description="round-engine processes beside the API processes, which then never run rounds "
        "(0: none on this node, another runs them); unset: rounds run inside each API process",
    )
    notify_poll: float = Field(
        0.02,
        gt=0,
        description="seconds between polls of the SQLite change log that carries wake-ups between "
        "API and engine processes (Redis pushes them)",
    )
    engine_metrics_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="engine worker i serves its process metrics (round and scoring durations) at "
        "http://HOST:PORT+i/metrics; unset: not exported",
    )
    data_dirs: tuple[Path, ...] = Field(
        (),
        description="directories task params may name files in (maps, scenarios, databases, query "
        "folders); a path outside them gets 400. Empty: tasks may name no files",
        json_schema_extra={"flag": "data-dir"},
    )
    kinds: tuple[str, ...] = Field(
        (),
        description="kinds this coordinator accepts tasks of (default: every installed kind)",
        json_schema_extra={"flag": "kind"},
    )

    @model_validator(mode="after")
    def _strong_admin_token(self) -> ServiceSettings:
        if self.admin_token is not None and not self.insecure_dev_token:
            reason = weak_token_reason(self.admin_token.get_secret_value())
            if reason is not None:
                raise ValueError(f"{reason}, or pass --insecure-dev-token for local development")
        return self


def read_admin_token(environ: Mapping[str, str], token_file: Path | None) -> SecretStr | None:
    """The admin token from a file (preferred: no token in the process table) or BLOCKOPT_ADMIN_TOKEN."""
    return read_secret(environ, "BLOCKOPT_ADMIN_TOKEN", token_file)


def read_secret(environ: Mapping[str, str], variable: str, token_file: Path | None) -> SecretStr | None:
    """A secret from a file (preferred: nothing in the process table) or the environment variable."""
    if token_file is not None:
        text = token_file.read_text().strip()
        if not text:
            raise ValueError(f"token file {token_file} is empty")
        return SecretStr(text)
    value = environ.get(variable, "").strip()
    return SecretStr(value) if value else None


SECRET_VARIABLES = {"admin_token": "BLOCKOPT_ADMIN_TOKEN", "metrics_token": "BLOCKOPT_METRICS_TOKEN"}
"""Secret settings and the environment variable each falls back to (flags take only files)."""


def from_env(
    environ: Mapping[str, str] | None = None,
    admin_token_file: Path | None = None,
    secret_files: Mapping[str, Path | None] | None = None,
    **overrides: object,
) -> ServiceSettings:
    env = os.environ if environ is None else environ
    files = {"admin_token": admin_token_file, **(secret_files or {})}
    secrets = {name: read_secret(env, var, files.get(name)) for name, var in SECRET_VARIABLES.items()}
    return ServiceSettings(**secrets, **overrides)  # type: ignore[arg-type]
