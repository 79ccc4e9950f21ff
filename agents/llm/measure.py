"""Prompt tokens per lease, per task kind: the cost figure of the ``llm`` proposer.

    .venv/bin/python -m agents.llm.measure KIND '{"blocks": 16}'

Measures the first-turn prompt (system + user with the embedded contract) for
every block at the initial state and after one sweep of the kind's heuristic
(numbers then have all their digits), with our estimator and, when the
optional ``bpe_openai`` wheel is importable, the real o200k tokenizer.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from typing import Any

from agents.llm.prompts import template_for
from agents.llm.tokens import estimate_chat_tokens
from tasks.base import Task
from tasks.registry import create_task


def envelope(task: Task[Any], state: Any, block: int) -> dict[str, Any]:
    """The contract as a lease carries it (mirrors the coordinator's envelope; agents do not import it)."""
    budget = {"rounds": 100, "seconds": 600.0, "tokens": 1_000_000, "calls": 200}
    return {"block": block, "version": 1, "budget": budget, "data": task.contract(state, block)}


def swept(task: Task[Any], state: Any) -> Any:
    """The state after every block took its heuristic proposal once (Jacobi sweep)."""
    heuristic = task.make_proposer(task.ProposerParams(), seed=0)
    changes = {}
    for b in task.blocks():
        draft = heuristic.propose(envelope(task, state, b))
        if draft is not None:
            changes[b] = task.validate(b, draft.value)
    return task.apply(state, changes)


def o200k_counter() -> Callable[[list[dict[str, str]]], int] | None:
    try:
        import bpe_openai  # type: ignore[import-not-found]
    except ImportError:
        return None
    enc = bpe_openai.get_encoding("o200k_base")
    return lambda messages: 40 + sum(4 + len(enc.encode(m["content"])) for m in messages)


def measure(
    kind: str, params: dict[str, Any], float_digits: int | None = 8, sweep: bool = True
) -> dict[str, Any]:
    task = create_task(kind, params)
    template = template_for(kind, float_digits)
    real = o200k_counter()
    rows: dict[str, Any] = {"kind": kind, "name": task.name, "blocks": task.n_blocks, "digits": float_digits}
    state0 = task.initial_state()
    states = [("initial", state0)] + ([("swept", swept(task, state0))] if sweep else [])
    for label, state in states:
        prompts = [template.messages(envelope(task, state, b)) for b in task.blocks()]
        est = [estimate_chat_tokens(m) for m in prompts]
        rows[label] = {"estimate_mean": round(statistics.fmean(est), 1), "estimate_max": max(est)}
        if real is not None:
            rows[label]["o200k_mean"] = round(statistics.fmean(real(m) for m in prompts), 1)
    return rows


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.llm.measure", description=__doc__.splitlines()[0])
    parser.add_argument("kind")
    parser.add_argument("params", nargs="?", default="{}", help="task params as JSON")
    parser.add_argument("--digits", type=int, default=8, help="significant digits of floats (0: all)")
    parser.add_argument("--no-sweep", action="store_true", help="initial state only (slow heuristics)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.kind, json.loads(args.params), args.digits or None, not args.no_sweep)))
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
