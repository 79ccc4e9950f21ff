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

from pydantic import BaseModel, ConfigDict, Field, SecretStr

StoreKind = Literal["memory", "sqlite", "redis"]


class ServiceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    admin_token: SecretStr | None = Field(
        None, description="bearer token for task administration; None refuses every admin call"
    )
    store: StoreKind = "memory"
    sqlite_path: str | None = Field(None, description="the SQLite file when store='sqlite' (WAL mode, durable)")
    retain_finished: float | None = Field(
        None, gt=0, description="seconds a finished task is kept before it is deleted from the store; None keeps it"
    )
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="the shared Redis when store='redis'")
    redis_prefix: str = Field("blockopt:", min_length=1, description="every Redis key starts with this")
    redis_commit: Literal["lua", "watch"] = Field("lua", description="commit as one Lua script or WATCH/MULTI")
    round_lock_ttl: float = Field(
        5.0, gt=0, description="seconds a replica's round lock lives without renewal (renewed every third of it "
                               "while a round runs); how long a task waits when the lock holder dies"
    )
    lease_ttl: float = Field(10.0, gt=0, description="seconds a lease lives without a renew")
    round_deadline: float = Field(
        2.0, gt=0, description="seconds after a round's first proposal at which it closes regardless of quorum"
    )
    quorum: float = Field(
        1.0, gt=0, le=1.0, description="fraction of leased blocks that must have submitted to close a round"
    )
    tick: float = Field(0.05, gt=0, description="scheduler period: lease expiry, deadlines, time budgets")
    max_body_bytes: int = Field(1 << 20, gt=0, description="request bodies above this get 413")
    rate_per_agent: float = Field(50.0, gt=0, description="sustained requests per second per agent")
    rate_burst: float = Field(100.0, gt=0, description="token-bucket burst per agent")
    default_max_rounds: int = Field(1000, ge=1)
    max_wait: float = Field(10.0, ge=0, description="upper bound on long-poll waits (?wait=)")
    metrics_max_tasks: int = Field(50, ge=1, description="tasks exported with per-task labels")
    metrics_max_agents: int = Field(100, ge=1, description="agents exported by name; the rest as 'other'")
    retry_after: float = Field(0.2, gt=0, description="Retry-After hint when no block is free")


def read_admin_token(environ: Mapping[str, str], token_file: Path | None) -> SecretStr | None:
    """The admin token from a file (preferred: no token in the process table) or BLOCKOPT_ADMIN_TOKEN."""
    if token_file is not None:
        text = token_file.read_text().strip()
        if not text:
            raise ValueError(f"admin token file {token_file} is empty")
        return SecretStr(text)
    value = environ.get("BLOCKOPT_ADMIN_TOKEN", "").strip()
    return SecretStr(value) if value else None


def from_env(
    environ: Mapping[str, str] | None = None, admin_token_file: Path | None = None, **overrides: object
) -> ServiceSettings:
    env = os.environ if environ is None else environ
    return ServiceSettings(admin_token=read_admin_token(env, admin_token_file), **overrides)  # type: ignore[arg-type]
