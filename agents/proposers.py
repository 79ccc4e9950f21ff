"""Proposer factory keyed by name: ``heuristic`` now, ``llm`` (agents/llm*) plugs in the same way.

A proposer module registers itself with ``@register_proposer("name")``, or
defines a module-level ``make_proposer(task, knobs, seed, options)``; an
unregistered name ``N`` is looked up by importing ``agents.N`` (then
``agents.N_proposer``), so a new proposer needs no edit here.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

from tasks.base import Draft, Proposer, Task

ProposerFactory = Callable[[Task[Any], Mapping[str, Any], int, Mapping[str, str]], Proposer]
_FACTORIES: dict[str, ProposerFactory] = {}


class UnknownProposer(LookupError):
    pass


def register_proposer(name: str) -> Callable[[ProposerFactory], ProposerFactory]:
    def deco(factory: ProposerFactory) -> ProposerFactory:
        _FACTORIES[name] = factory
        return factory

    return deco


def _discover(name: str) -> ProposerFactory | None:
    for module_name in (f"agents.{name}", f"agents.{name}_proposer"):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise  # the module exists but one of its imports is missing: say so
            continue
        if name in _FACTORIES:
            return _FACTORIES[name]
        factory = getattr(module, "make_proposer", None)
        if callable(factory):
            _FACTORIES[name] = factory
            return factory
    return None


def make_proposer(
    name: str, task: Task[Any], knobs: Mapping[str, Any], seed: int, options: Mapping[str, str] | None = None
) -> Proposer:
    factory = _FACTORIES.get(name) or _discover(name)
    if factory is None:
        raise UnknownProposer(f"unknown proposer '{name}' (known: {', '.join(sorted(_FACTORIES))})")
    return factory(task, knobs, seed, options or {})


class ThinkingProposer(Proposer):
    """Another proposer that takes ``delay_s`` longer: models slow agents (and lets tests kill one mid-lease)."""

    def __init__(self, inner: Proposer, delay_s: float) -> None:
        self.inner = inner
        self.delay_s = delay_s
        self.retry_pause = inner.retry_pause

    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        time.sleep(self.delay_s)
        return self.inner.propose(contract)


@register_proposer("heuristic")
def heuristic(task: Task[Any], knobs: Mapping[str, Any], seed: int, options: Mapping[str, str]) -> Proposer:
    """The kind's own proposer, configured by the task's proposer knobs; option ``delay_s`` adds think time."""
    unknown = set(options) - {"delay_s"}
    if unknown:
        raise UnknownProposer(
            f"heuristic proposer: unknown option(s) {', '.join(sorted(unknown))} (known: delay_s)"
        )
    proposer = task.make_proposer(task.ProposerParams.model_validate(dict(knobs)), seed=seed)
    delay = float(options.get("delay_s", 0.0))
    return ThinkingProposer(proposer, delay) if delay > 0 else proposer


@register_proposer("llm")
def llm(task: Task[Any], knobs: Mapping[str, Any], seed: int, options: Mapping[str, str]) -> Proposer:
    """OpenAI-compatible chat proposer (agents/llm); ``options`` are LLMSettings fields (base_url, model, ...)."""
    from agents.llm import LLMSettings, make_llm_proposer

    try:
        settings = LLMSettings.from_env(None, **dict(options))
    except ValueError as exc:
        raise UnknownProposer(f"llm proposer: bad option: {_first_line(exc)}") from None
    return make_llm_proposer(task.kind, task.params.model_dump(), settings, task=task)


@register_proposer("simulated-llm")
def simulated_llm(
    task: Task[Any], knobs: Mapping[str, Any], seed: int, options: Mapping[str, str]
) -> Proposer:
    """The heuristic with GPT-OSS-120B serving latency (labelled simulated).

    ``options`` are ServingRates fields (model, concurrent_streams, ...) plus ``reasoning_effort``.
    """
    from agents.llm import ServingRates, make_simulated_proposer

    rest = dict(options)
    effort = rest.pop("reasoning_effort", "low")
    try:
        rates = ServingRates.model_validate(rest) if rest else None
    except ValueError as exc:
        raise UnknownProposer(f"simulated-llm proposer: bad option: {_first_line(exc)}") from None
    if effort not in ("low", "medium", "high"):
        raise UnknownProposer(
            f"simulated-llm proposer: reasoning_effort must be low, medium or high, not {effort!r}"
        )
    level = cast(Literal["low", "medium", "high"], effort)  # checked just above
    return make_simulated_proposer(
        task.kind, task.params.model_dump(), knobs, seed=seed, rates=rates, effort=level, task=task
    )


def _first_line(exc: Exception) -> str:
    lines = str(exc).splitlines()
    return " ".join(lines[:3]) if lines else type(exc).__name__
