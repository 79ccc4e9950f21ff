"""Shared helpers of the LLM tests: a fake server per module and settings that never wait long."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from agents.llm import LLMSettings
from coordinator.engine.contract import contract_envelope
from coordinator.engine.rounds import RoundEngine
from tasks.base import Task
from tasks.registry import create_task
from tests.fake_openai import FakeConfig, FakeLLM, ServerThread

QUAD_PARAMS: dict[str, Any] = {"blocks": 8, "dim": 4, "coupling": 0.3, "seed": 1}


def quad_task() -> Task[Any]:
    return create_task("quadratic", QUAD_PARAMS)


@contextlib.contextmanager
def fake_llm(tasks: dict[str, Task[Any]], config: FakeConfig | None = None) -> Iterator[ServerThread]:
    """The fake OpenAI-compatible server on a loopback port, answering for ``tasks`` (kind -> task)."""
    srv = ServerThread(FakeLLM(tasks, config)).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module", name="server")
def quad_llm_server() -> Iterator[ServerThread]:
    """The ``server`` fixture of the quadratic LLM tests (import it into the module to use it)."""
    with fake_llm({"quadratic": quad_task()}) as srv:
        yield srv


def fast_settings(base_url: str, **overrides: Any) -> LLMSettings:
    """Short timeouts and backoffs so fault tests take milliseconds, not minutes."""
    values: dict[str, Any] = {
        "base_url": base_url,
        "connect_timeout_s": 2.0,
        "read_timeout_s": 5.0,
        "call_deadline_s": 10.0,
        "total_deadline_s": 20.0,
        "max_retries": 3,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    values.update(overrides)
    return LLMSettings.from_env({}, **values)


def first_contract(task: Task[Any], block: int = 2, budget: dict[str, Any] | None = None) -> dict[str, Any]:
    snap = RoundEngine(task).initial_snapshot()
    return contract_envelope(task, snap, block, budget if budget is not None else {"rounds": 10})
