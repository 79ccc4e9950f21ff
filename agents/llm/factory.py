"""The two constructors a worker needs: from what a lease says (kind, params) to a proposer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from agents.llm.client import ChatClient
from agents.llm.proposer import LLMProposer
from agents.llm.settings import LLMSettings, ReasoningEffort
from agents.llm.simulated import ServingRates, SimulatedLLMProposer
from tasks.base import Task
from tasks.registry import create_task


def make_llm_proposer(
    kind: str,
    params: Mapping[str, Any],
    settings: LLMSettings,
    *,
    transport: httpx.BaseTransport | None = None,
    task: Task[Any] | None = None,
) -> LLMProposer:
    """An ``llm`` proposer for one task; raises UnknownKind / InvalidParams like ``create_task``.

    Pass ``task`` when the caller already built it (large instances are costly to rebuild).
    """
    task = task if task is not None else create_task(kind, dict(params))
    return LLMProposer(task, settings, client=ChatClient(settings, transport=transport))


def make_simulated_proposer(
    kind: str,
    params: Mapping[str, Any],
    knobs: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
    rates: ServingRates | None = None,
    effort: ReasoningEffort = "low",
    sleep: bool = True,
    task: Task[Any] | None = None,
) -> SimulatedLLMProposer:
    """The task's heuristic proposer (configured by ``knobs``) with GPT-OSS-120B serving latency."""
    task = task if task is not None else create_task(kind, dict(params))
    heuristic = task.make_proposer(task.ProposerParams.model_validate(dict(knobs or {})), seed=seed)
    return SimulatedLLMProposer(heuristic, kind, rates, effort=effort, sleep=sleep)
