"""A response body's JSON, with a lease's contract data sent as the kind rendered it.

A kind may return its contract data as a ``RenderedContract``: a dict that carries its own JSON text, made
from pieces the kind keeps between leases. Serializing the dict again was a third of the coordinator's
share of a lease with a 63 KB contract (docs/notes/2026-12-05-lease-costs.md), so the grant's JSON is
written around that text: the grant with ``data`` null, then the text in its place. Every body that may
hold a grant (a lease, a proposal's view or an abandoned lease's receipt with its ``next_lease``) is
written here.
"""

from __future__ import annotations

from pydantic import BaseModel

from coordinator.runtime.wire import LeaseGrant
from tasks.base import RenderedContract


def dump_json(model: BaseModel) -> str:
    """``model.model_dump_json()``: the same JSON value, with a lease's rendered contract data spliced in."""
    if isinstance(model, LeaseGrant):
        return _grant_json(model)
    grant = getattr(model, "next_lease", None)
    if isinstance(grant, LeaseGrant):
        if isinstance(grant.contract.get("data"), RenderedContract):
            head = model.model_copy(update={"next_lease": None}).model_dump_json()
            return _splice(head, '"next_lease":null}', '"next_lease":' + _grant_json(grant) + "}") or (
                model.model_dump_json()
            )
    return model.model_dump_json()


def _grant_json(grant: LeaseGrant) -> str:
    data = grant.contract.get("data")
    if not isinstance(data, RenderedContract):
        return grant.model_dump_json()
    head = grant.model_copy(update={"contract": {**grant.contract, "data": None}}).model_dump_json()
    # the contract is the grant's last field, and ``data`` the envelope's last key (``contract_envelope``)
    return _splice(head, '"data":null}}', '"data":' + data.json + "}}") or grant.model_dump_json()


def _splice(head: str, tail: str, replacement: str) -> str | None:
    """``head`` with its ``tail`` replaced; None when it does not end so (a key order this module does not
    know: the caller serializes the whole model then)."""
    return head[: -len(tail)] + replacement if head.endswith(tail) else None
