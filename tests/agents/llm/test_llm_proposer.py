"""The ``llm`` proposer survives every fault the fake server injects and says why it gave up."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from agents.llm import ChatClient, LLMProposer, LLMSettings, make_llm_proposer
from agents.llm.prompts import recover_contract, template_for
from agents.llm.tokens import estimate_chat_tokens
from tasks.registry import create_task
from tests.fake_openai import FakeConfig, FakeLLM, ServerThread
from tests.llm_support import (
    QUAD_PARAMS,
    fast_settings,
    first_contract,
    quad_llm_server,  # noqa: F401  (the module's "server" fixture)
    quad_task,
)

pytestmark = pytest.mark.timeout(60)


def proposer(server: ServerThread, faults: str, **settings: Any) -> LLMProposer:
    server.fake.configure(
        FakeConfig(faults=faults, retry_after_s=0, retry_after_ms=5, hang_s=3.0, slow_chunk_s=0.1)
    )
    return make_llm_proposer("quadratic", QUAD_PARAMS, fast_settings(server.base_url, **settings))


def exact_answer(contract: dict[str, Any]) -> np.ndarray:
    data = contract["data"]
    a = np.asarray(data["local_objective"]["A"])
    return np.linalg.solve(a, np.asarray(data["local_objective"]["b"]) - np.asarray(data["correction"]))


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("fault", "json_from"), [("none", "json"), ("prose", "prose"), ("fence", "fence")])
def test_sound_answers_in_any_wrapping_become_drafts(
    server: ServerThread, fault: str, json_from: str, stream: bool
) -> None:
    p = proposer(server, fault, stream=stream)
    contract = first_contract(p.task)
    draft = p.propose(contract)
    assert draft is not None and draft.block == 2
    np.testing.assert_allclose(draft.value, exact_answer(contract), rtol=1e-6)
    assert draft.predicted_improvement > 0 and draft.info["predicted_from"] == "surrogate"
    assert p.last_outcome is not None and p.last_outcome.json_from == json_from
    assert draft.info["usage"]["calls"] == 1 and draft.info["usage"]["prompt_tokens"] > 100
    assert not p.failures


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("malformed", "malformed_json"),
        ("truncated", "truncated"),
        ("wrong_block", "wrong_block"),
        ("illegal", "bad_shape"),
    ],
)
def test_bad_output_is_repaired_once(server: ServerThread, fault: str, kind: str) -> None:
    p = proposer(server, f"{fault},none")
    draft = p.propose(first_contract(p.task))
    assert draft is not None
    assert p.last_outcome is not None and p.last_outcome.repair_asked == (kind,)
    assert p.repairs[kind] == 1 and not p.failures
    assert p.last_usage.calls == 2  # the repair turn is a second, counted call


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("malformed", "malformed_json"),
        ("truncated", "truncated"),
        ("wrong_block", "wrong_block"),
        ("illegal", "bad_shape"),
    ],
)
def test_bad_output_twice_gives_up_with_the_reason(server: ServerThread, fault: str, kind: str) -> None:
    p = proposer(server, fault)
    assert p.propose(first_contract(p.task)) is None
    out = p.last_outcome
    assert out is not None and out.status == "failed" and out.failure == kind and out.reason
    assert p.failures[kind] == 1
    assert p.last_usage.calls == 2 and p.last_usage.tokens > 0


def test_repair_turn_quotes_the_validator_error(server: ServerThread) -> None:
    p = proposer(server, "illegal,none")
    seen: list[list[dict[str, str]]] = []
    original = p.client.complete

    def spy(messages: Any, **kw: Any) -> Any:
        seen.append(list(messages))
        return original(messages, **kw)

    p.client.complete = spy  # type: ignore[method-assign]
    assert p.propose(first_contract(p.task)) is not None
    repair = seen[1][-1]["content"]
    assert repair.startswith("Your answer was rejected: block value must have shape (4,), got (3,)")
    assert seen[1][-2]["role"] == "assistant"


@pytest.mark.parametrize(
    ("fault", "kind"), [("rate_limit", "rate_limited"), ("server_error", "server_error")]
)
def test_transport_faults_are_retried_then_given_up(server: ServerThread, fault: str, kind: str) -> None:
    p = proposer(server, f"{fault},{fault},none")
    assert p.propose(first_contract(p.task)) is not None
    p = proposer(server, fault, max_retries=2)
    assert p.propose(first_contract(p.task)) is None
    assert p.last_outcome is not None and p.last_outcome.failure == kind and p.failures[kind] == 1


def test_hang_gives_up_on_timeout(server: ServerThread) -> None:
    p = proposer(server, "hang", read_timeout_s=0.3, max_retries=0)
    assert p.propose(first_contract(p.task)) is None
    assert p.last_outcome is not None and p.last_outcome.failure == "timeout"
    assert p.last_usage.calls == 1 and p.last_usage.seconds > 0


def test_slow_stream_gives_up_on_the_deadline(server: ServerThread) -> None:
    p = proposer(server, "slow_stream", stream=True, call_deadline_s=0.4, total_deadline_s=0.5)
    assert p.propose(first_contract(p.task)) is None
    assert p.last_outcome is not None and p.last_outcome.failure == "timeout"


def test_falls_back_to_plain_text_without_structured_output(server: ServerThread) -> None:
    p = proposer(server, "prose")
    server.fake.configure(FakeConfig(faults="prose", reject_response_format=True))
    assert p.propose(first_contract(p.task)) is not None
    assert p.structured is False and p.last_outcome is not None and p.last_outcome.json_from == "prose"


def test_budget_is_in_the_prompt_and_enforced(server: ServerThread) -> None:
    p = proposer(server, "none")
    contract = first_contract(p.task, budget={"rounds": 7, "tokens": 50_000, "calls": 3})
    user = template_for("quadratic").messages(contract)[1]["content"]
    assert "Budget left: 7 rounds, 50000 tokens, 3 LLM calls." in user
    before = server.fake.requests
    assert p.propose(first_contract(p.task, budget={"tokens": 300})) is None
    assert p.last_outcome is not None and p.last_outcome.failure == "budget_exhausted"
    assert p.propose(first_contract(p.task, budget={"calls": 0})) is None
    assert server.fake.requests == before  # no call was made


def test_one_call_left_means_no_repair_turn(server: ServerThread) -> None:
    p = proposer(server, "malformed,none")
    assert p.propose(first_contract(p.task, budget={"calls": 1})) is None
    assert p.last_outcome is not None and p.last_outcome.failure == "malformed_json"
    assert p.last_usage.calls == 1


def test_never_raises_on_a_broken_contract(server: ServerThread) -> None:
    p = proposer(server, "none")
    assert p.propose({"version": 0}) is None
    assert p.last_outcome is not None and p.last_outcome.failure == "bad_contract"
    assert p.propose({"block": 1, "version": 0, "data": {"kind": "quadratic"}}) is None
    assert p.last_outcome is not None and p.last_outcome.failure == "internal_error"


def test_usage_accumulates_over_leases(server: ServerThread) -> None:
    p = proposer(server, "none")
    for block in range(3):
        assert p.propose(first_contract(p.task, block=block)) is not None
    assert p.total_usage.calls == 3 and p.total_usage.prompt_tokens >= 3 * 100
    assert p.counters()["usage"]["calls"] == 3


def test_contract_round_trips_through_the_prompt() -> None:
    task = quad_task()
    contract = first_contract(task)
    messages = template_for("quadratic", float_digits=None).messages(contract)
    assert recover_contract(messages) == json.loads(json.dumps(contract))


@pytest.mark.parametrize(("kind", "phrase"), [("sqlplan", "CROSS JOIN"), ("knapsack", "data.value")])
def test_other_kinds_get_their_template_or_the_generic_one(kind: str, phrase: str) -> None:
    contract = {
        "block": 0,
        "version": 3,
        "budget": {"rounds": 2},
        "data": {"kind": kind, "value": {"r1": [[0, 0], [0, 1]]}, "reserved": [[1, 1, 2]]},
    }
    template = template_for(kind)
    user = template.messages(contract)[1]["content"]
    assert user.startswith(f"Task kind: {kind}") and phrase in user
    assert recover_contract(template.messages(contract)) == contract
    schema = template.response_format(contract)["json_schema"]["schema"]
    assert schema["properties"]["block"]["enum"] == [0]


def test_routing_lease_through_the_fake_server() -> None:
    """A real routing contract: the template's schema fits, the server's heuristic answer validates."""
    params = {"robots": 8, "blocks": 2, "seed": 0, "initial": "shortest"}  # a start with work left
    task = create_task("routing", params)
    srv = ServerThread(FakeLLM({"routing": task}, FakeConfig(faults="fence"))).start()
    try:
        p = make_llm_proposer("routing", params, fast_settings(srv.base_url), task=task)
        contract = first_contract(task, block=1)
        user = p.template.messages(contract)[1]["content"]
        assert "Task kind: routing" in user and "paths in the order of data.robots" in user
        draft = p.propose(contract)
        assert p.last_outcome is not None and p.last_outcome.failure is None, p.last_outcome
        assert draft is not None and len(draft.value) == len(contract["data"]["robots"])
    finally:
        srv.stop()


def test_prompt_tokens_per_lease_quadratic() -> None:
    """The figure BENCHMARKS.md reports: small blocks give small prompts."""
    task = quad_task()
    tokens = [
        estimate_chat_tokens(template_for("quadratic").messages(first_contract(task, b)))
        for b in range(task.n_blocks)
    ]
    assert 350 < min(tokens) <= max(tokens) < 900


def test_settings_never_read_the_environment_after_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLOCKOPT_LLM_API_KEY", "from-env")
    settings = LLMSettings.from_env(base_url="http://127.0.0.1:9/v1")
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "from-env"
    explicit = LLMSettings.from_env({}, api_key="given")
    assert explicit.api_key is not None and explicit.api_key.get_secret_value() == "given"
    client = ChatClient(explicit)
    assert client._http.headers["authorization"] == "Bearer given"
    client.close()


def test_routing_paths_out_of_contract_order_are_refused_before_submission() -> None:
    """Blocks are regrouped, so only the contract says which robot each path is for: the template checks it
    (and the repair turn then quotes the reason)."""
    from coordinator.engine.contract import contract_envelope
    from coordinator.engine.rounds import RoundEngine
    from tasks.base import InvalidProposal

    task = create_task("routing", {"map": "empty-8-8", "robots": 6, "blocks": 2, "exact_limit": 0})
    snap = RoundEngine(task).initial_snapshot()
    contract = contract_envelope(task, snap, 0, {})
    value = task.encode_value(task.block_value(snap.state, 0))
    template = template_for("routing")
    template.check(contract, value)  # in contract order: fine
    with pytest.raises(InvalidProposal) as info:
        template.check(contract, value[::-1])
    assert info.value.code == "wrong_robot" and "order of data.robots" in info.value.reason
