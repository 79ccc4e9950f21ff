"""A lease's JSON carries the kind's rendered contract text (``RenderedContract``) in place of its dict, in a
lease, in a proposal's view and in an abandoned lease's receipt with its next lease; anything else is
written as pydantic writes it."""

from __future__ import annotations

import json
from typing import Any

from coordinator.api.routes.trajectories import AbandonOut
from coordinator.runtime.wire import LeaseGrant, ProposalView
from coordinator.runtime.wire_json import dump_json
from tasks.base import RenderedContract
from tasks.registry import create_task


def _grant(data: Any) -> LeaseGrant:
    contract = {"block": 1, "version": 7, "budget": {"seconds": 3.5}, "data": data}
    return LeaseGrant.model_construct(
        lease_id="l1", agent_id="a1", block=1, version=7, expires_at=12.5, ttl=10.0, contract=contract
    )


def test_a_routing_grant_reads_back_as_its_model() -> None:
    task = create_task("routing", {"map": "random-32-32-10", "robots": 40, "blocks": 4, "seed": 1})
    data = task.contract(task.initial_state(), 2)
    assert isinstance(data, RenderedContract)
    grant = _grant(data)
    assert json.loads(dump_json(grant)) == json.loads(grant.model_dump_json())
    view = ProposalView(id="p1", agent_id="a1", block=1, base_version=7, status="pending", next_lease=grant)
    assert json.loads(dump_json(view)) == json.loads(view.model_dump_json())


def test_the_kinds_text_is_what_is_sent() -> None:
    """Were the dict serialized again, the text's value (2) would not show: the splice is what runs."""
    grant = _grant(RenderedContract({"a": 1}, '{"a":2}'))
    sent = json.loads(dump_json(grant))
    assert sent["contract"]["data"] == {"a": 2}
    assert sent["lease_id"] == "l1" and sent["contract"]["budget"] == {"seconds": 3.5}
    view = ProposalView(id="p1", agent_id="a1", block=1, base_version=7, status="pending", next_lease=grant)
    assert json.loads(dump_json(view))["next_lease"]["contract"]["data"] == {"a": 2}
    receipt = json.loads(dump_json(AbandonOut(id="r1", recorded=True, next_lease=grant)))
    assert receipt["recorded"] is True and receipt["next_lease"]["contract"]["data"] == {"a": 2}


def test_a_plain_contract_or_an_unknown_key_order_is_written_whole() -> None:
    plain = _grant({"a": 1})
    assert dump_json(plain) == plain.model_dump_json()
    data = RenderedContract({"a": 1}, '{"a":2}')
    reordered = plain.model_copy(update={"contract": {"data": data, "block": 1}})
    assert json.loads(dump_json(reordered))["contract"] == {"data": {"a": 1}, "block": 1}
