"""The chat client against a real OpenAI-compatible server on loopback: retries, deadlines, usage."""

from __future__ import annotations

import httpx
import pytest

from agents.llm import ChatClient, LLMError, LLMSettings
from agents.llm.client import parse_retry_after
from agents.llm.jsonparse import NoJSON, extract_json
from agents.llm.prompts import template_for
from tests.fake_openai import FakeConfig, ServerThread
from tests.llm_support import (
    fast_settings,
    first_contract,
    quad_llm_server,  # noqa: F401  (the module's "server" fixture)
    quad_task,
)

pytestmark = pytest.mark.timeout(60)


class Recorder:
    """Stands in for time.sleep: records the waits instead of sleeping them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _messages() -> list[dict[str, str]]:
    return template_for("quadratic").messages(first_contract(quad_task()))


def test_models_endpoint_lists_the_model(server: ServerThread) -> None:
    body = httpx.get(server.base_url + "/models").json()
    assert [m["id"] for m in body["data"]] == ["openai/gpt-oss-120b"]


@pytest.mark.parametrize("stream", [False, True])
def test_sound_answer_reports_usage(server: ServerThread, stream: bool) -> None:
    server.fake.configure(FakeConfig(faults="none"))
    with ChatClient(fast_settings(server.base_url, stream=stream)) as client:
        result = client.complete(_messages())
    assert result.finish_reason == "stop"
    assert '"block": 2' in result.text
    assert not result.usage_estimated
    u = result.usage
    assert u.calls == 1 and u.prompt_tokens > 100 and u.completion_tokens > u.reasoning_tokens > 0
    assert u.model == "openai/gpt-oss-120b" and u.seconds > 0


def test_429_honours_retry_after_seconds(server: ServerThread) -> None:
    server.fake.configure(FakeConfig(faults="rate_limit,rate_limit,none", retry_after_s=2))
    sleep = Recorder()
    with ChatClient(fast_settings(server.base_url), sleep=sleep) as client:
        result = client.complete(_messages())
    assert [r.status for r in result.retries] == [429, 429]
    assert all(r.retry_after_s == 2.0 for r in result.retries)
    assert all(2.0 <= w <= 2.2 for w in sleep.waits)
    assert result.usage.calls == 1  # rejected requests cost no model call


def test_429_prefers_retry_after_ms() -> None:
    assert parse_retry_after(httpx.Headers({"retry-after": "3", "retry-after-ms": "250"})) == 0.25
    assert parse_retry_after(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert parse_retry_after(httpx.Headers({})) is None


def test_429_past_the_cap_gives_up_without_waiting(server: ServerThread) -> None:
    server.fake.configure(FakeConfig(faults="rate_limit", retry_after_s=600))
    sleep = Recorder()
    with ChatClient(fast_settings(server.base_url), sleep=sleep) as client, pytest.raises(LLMError) as err:
        client.complete(_messages())
    assert err.value.kind == "rate_limited" and err.value.status == 429
    assert sleep.waits == []


def test_500_is_retried_with_jittered_backoff(server: ServerThread) -> None:
    server.fake.configure(FakeConfig(faults="server_error"))
    sleep = Recorder()
    settings = fast_settings(server.base_url, max_retries=3, backoff_base_s=1.0, backoff_max_s=3.0)
    with ChatClient(settings, sleep=sleep) as client, pytest.raises(LLMError) as err:
        client.complete(_messages())
    assert err.value.kind == "server_error" and len(err.value.retries) == 3
    caps = [1.0, 2.0, 3.0]
    assert all(cap / 2 <= w <= cap for w, cap in zip(sleep.waits, caps, strict=True))
    assert err.value.usage.calls == 0 and server.fake.requests == 4


def test_wrong_model_is_not_retried(server: ServerThread) -> None:
    server.fake.configure(FakeConfig(faults="none"))
    with ChatClient(fast_settings(server.base_url, model="no-such-model")) as client:
        with pytest.raises(LLMError) as err:
            client.complete(_messages())
    assert err.value.kind == "http_error" and err.value.status == 404 and not err.value.retries


def test_hang_times_out(server: ServerThread) -> None:
    server.fake.configure(FakeConfig(faults="hang", hang_s=5.0))
    settings = fast_settings(server.base_url, read_timeout_s=0.3, max_retries=0)
    with ChatClient(settings) as client, pytest.raises(LLMError) as err:
        client.complete(_messages())
    assert err.value.kind == "timeout"
    assert err.value.usage.calls == 1  # the model may have been generating: the call counts


def test_slow_stream_hits_the_call_deadline(server: ServerThread) -> None:
    """Each chunk arrives well within the read timeout; only the whole-call deadline stops it."""
    server.fake.configure(FakeConfig(faults="slow_stream", slow_chunk_s=0.1))
    settings = fast_settings(
        server.base_url,
        stream=True,
        read_timeout_s=5.0,
        call_deadline_s=0.5,
        total_deadline_s=0.6,
        max_retries=2,
    )
    with ChatClient(settings) as client, pytest.raises(LLMError) as err:
        client.complete(_messages())
    assert err.value.kind == "timeout"


def test_api_key_comes_from_the_environment(server: ServerThread) -> None:
    server.fake.configure(FakeConfig(faults="none", api_key="sk-test"))
    try:
        settings = LLMSettings.from_env({"OPENAI_API_KEY": "sk-test"}, base_url=server.base_url)
        assert "sk-test" not in repr(settings)
        with ChatClient(settings) as client:
            assert client.complete(_messages()).finish_reason == "stop"
        own = LLMSettings.from_env(
            {"BLOCKOPT_LLM_API_KEY": "wrong", "OPENAI_API_KEY": "sk-test"},
            base_url=server.base_url,
            max_retries=0,
        )
        with ChatClient(own) as client, pytest.raises(LLMError) as err:
            client.complete(_messages())
        assert err.value.status == 401
    finally:
        server.fake.configure(FakeConfig(faults="none"))


def test_connection_refused_is_a_transport_error() -> None:
    with ChatClient(fast_settings("http://127.0.0.1:9/v1", max_retries=1), sleep=Recorder()) as client:
        with pytest.raises(LLMError) as err:
            client.complete(_messages())
    assert err.value.kind == "transport"


@pytest.mark.parametrize(
    ("text", "how"),
    [
        ('{"block": 1, "value": [1, 2]}', "json"),
        ('Sure.\n```json\n{"block": 1, "value": [1, 2]}\n```\nDone.', "fence"),
        ('I think {"block": 1, "value": {"a": [1, 2]}} is best.', "prose"),
    ],
)
def test_extract_json_finds_the_answer(text: str, how: str) -> None:
    obj, found = extract_json(text)
    assert found == how and obj["block"] == 1


@pytest.mark.parametrize(
    "text",
    ["", "no json here", "{'block': 1}", '{"value": NaN}', "[1, 2]", '{"block": 1, "value": [1,'],
)
def test_extract_json_refuses_non_json(text: str) -> None:
    with pytest.raises(NoJSON):
        extract_json(text)
