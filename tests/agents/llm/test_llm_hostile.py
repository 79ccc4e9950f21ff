"""A hostile OpenAI-compatible server never drives the LLM proposer into its catch-all.

Every hostile mode of ``tests/fake_openai.py`` (``HOSTILE_REASONS``) is served
on every turn of a lease, with and without streaming; the proposer must end
with that mode's own reason (or, for implausible usage figures, a usable draft
whose usage is flagged and replaced by the estimate), and never with
``internal_error``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agents.llm import LLMProposer, make_llm_proposer
from tests.fake_openai import HOSTILE_REASONS, FakeConfig, ServerThread
from tests.llm_support import (
    QUAD_PARAMS,
    fast_settings,
    first_contract,
    quad_llm_server,  # noqa: F401  (the module's "server" fixture)
)

pytestmark = pytest.mark.timeout(120)
CAP = 64 * 1024


def proposer(server: ServerThread, faults: str, **settings: Any) -> LLMProposer:
    server.fake.configure(FakeConfig(faults=faults, oversized_bytes=4 * CAP))
    return make_llm_proposer(
        "quadratic",
        QUAD_PARAMS,
        fast_settings(server.base_url, max_response_bytes=CAP, max_retries=1, **settings),
    )


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("mode", sorted(HOSTILE_REASONS))
def test_each_hostile_mode_gets_its_own_reason(server: ServerThread, mode: str, stream: bool) -> None:
    p = proposer(server, mode, stream=stream)
    draft = p.propose(first_contract(p.task))
    outcome = p.last_outcome
    assert outcome is not None
    expected = HOSTILE_REASONS[mode]
    if expected is None:  # implausible usage: the answer is used, the figures are flagged and replaced
        assert draft is not None and outcome.status == "draft"
        assert len(outcome.usage_anomalies) == 1 and p.usage_anomalies == 1
        assert draft.info["usage_anomalies"] == list(outcome.usage_anomalies)
        usage = draft.info["usage"]
        assert 0 < usage["prompt_tokens"] < 100_000 and 0 <= usage["completion_tokens"] < 100_000
    else:
        assert draft is None and outcome.status == "failed"
        assert outcome.failure == expected, (mode, outcome.failure, outcome.reason)
    assert "internal_error" not in p.failures


def test_a_mix_of_every_hostile_mode_records_zero_internal_errors(server: ServerThread) -> None:
    """Many leases against a schedule cycling through every mode: every failure is named."""
    modes = sorted(HOSTILE_REASONS)
    p = proposer(server, ",".join(modes * 3))
    contract = first_contract(p.task)
    outcomes = Counter()
    for _ in range(len(modes) * 3 // 2):  # two turns per lease when the first fails
        p.propose(contract)
        assert p.last_outcome is not None
        outcomes[p.last_outcome.failure or p.last_outcome.status] += 1
    assert outcomes["internal_error"] == 0
    assert set(p.failures) <= {r for r in HOSTILE_REASONS.values() if r is not None}
    assert sum(outcomes.values()) == len(modes) * 3 // 2


def test_the_response_cap_is_what_stops_an_oversized_answer(server: ServerThread) -> None:
    """Control: with a cap above the answer's size the same answer is read and used."""
    p = proposer(server, "oversized")
    p.client.settings = p.settings = p.settings.model_copy(update={"max_response_bytes": 16 * CAP})
    p.client._http.close()
    from agents.llm import ChatClient

    p.client = ChatClient(p.settings)
    assert p.propose(first_contract(p.task)) is not None
