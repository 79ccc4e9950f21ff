"""One JSON line per proposal or abandoned lease: what users need to tune one prompt across models.

Agent, model, prompt and response sizes, verdict and reason, Δ̂ (predicted), Δ (measured),
δ = |Δ̂ − Δ| and the usage. ``GET /v1/tasks/{id}/trajectories`` (``api/routes/trajectories.py``)
streams them in arrival order.
"""

from __future__ import annotations

from typing import Any

from coordinator.engine.records import Verdict
from coordinator.store.base import AbandonedLease, QueuedProposal


def proposal_line(q: QueuedProposal, v: Verdict | None, names: dict[str, str]) -> dict[str, Any]:
    p, u = q.proposal, q.proposal.usage
    predicted, delta = p.predicted_improvement, (v.delta if v is not None else None)
    return {
        "type": "proposal",
        "id": p.id,
        "agent": p.agent,
        "agent_name": names.get(p.agent),
        "model": u.model,
        "block": p.block,
        "base_version": p.base_version,
        "at": q.received_at,
        "prompt_tokens": u.prompt_tokens,
        "response_tokens": u.completion_tokens,
        "reasoning_tokens": u.reasoning_tokens,
        "prompt_chars": u.prompt_chars,
        "response_chars": u.response_chars,
        "verdict": v.status if v is not None else "pending",
        "code": v.code if v is not None else None,
        "reason": v.reason if v is not None else None,
        "round": v.round if v is not None else None,
        "predicted": predicted,
        "delta": delta,
        "error": abs(predicted - delta) if delta is not None else None,
        "usage": u.model_dump(),
    }


def abandoned_line(a: AbandonedLease, names: dict[str, str]) -> dict[str, Any]:
    u = a.usage
    return {
        "type": "abandoned",
        "id": a.id,
        "agent": a.agent,
        "agent_name": names.get(a.agent),
        "model": u.model,
        "block": a.block,
        "base_version": a.base_version,
        "at": a.at,
        "prompt_tokens": u.prompt_tokens,
        "response_tokens": u.completion_tokens,
        "reasoning_tokens": u.reasoning_tokens,
        "prompt_chars": u.prompt_chars,
        "response_chars": u.response_chars,
        "verdict": a.outcome,
        "code": a.failure or a.outcome,
        "reason": a.reason,
        "round": None,
        "predicted": None,
        "delta": None,
        "error": None,
        "usage": u.model_dump(),
    }
