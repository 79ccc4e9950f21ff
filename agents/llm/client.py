"""A small OpenAI-compatible chat-completions client on httpx.

Why httpx and not the ``openai`` package: httpx is already the project's HTTP
client (docs/architecture.md §1), so this adds no dependency; the retry policy must honour
``Retry-After`` with our own caps and a deadline that covers slow *streams*
(the openai client's timeout is per read, so a server trickling one token a
second never times out); vLLM's extra request fields (``reasoning_effort``,
guided JSON) and response fields (``reasoning_content``) pass through without
``extra_body`` plumbing; and every retry is recorded for honest usage
accounting. The protocol surface we need is one POST and its SSE variant.

Nothing here interprets the model's text; that is the proposer's job.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from agents.llm.replies import ReplyError, UsageCheck, check_usage, parse_reply, refusal_of
from agents.llm.settings import LLMSettings
from agents.llm.tokens import estimate_chat_tokens, estimate_tokens
from agents.llm.usage import LLMUsage

Message = dict[str, str]
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryEvent:
    """One failed attempt that was retried: why, and how long we waited before the next."""

    attempt: int
    reason: str
    status: int | None
    wait_s: float
    retry_after_s: float | None = None


class LLMError(Exception):
    """A chat call that failed for good; ``kind`` is machine-readable.

    Kinds: ``timeout``, ``rate_limited``, ``server_error``, ``http_error``
    (a non-retryable status), ``transport`` (connection refused/reset),
    ``bad_response`` (not JSON), ``wrong_shape`` (JSON, not shaped like a chat completion),
    ``empty_choices``, ``refusal``, ``oversized`` (over ``max_response_bytes``). ``usage`` holds what the
    failed call still cost (seconds always; a call when the model may have run).
    """

    def __init__(
        self,
        kind: str,
        message: str,
        status: int | None = None,
        usage: LLMUsage | None = None,
        retries: Sequence[RetryEvent] = (),
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.usage = usage or LLMUsage()
        self.retries = tuple(retries)


@dataclass(frozen=True)
class ChatResult:
    text: str
    finish_reason: str | None
    usage: LLMUsage
    reasoning: str | None = None
    usage_estimated: bool = False
    """True when the server reported no usable usage and the token counts are our estimate."""
    usage_anomaly: str | None = None
    """Why the server's usage figures were replaced by the estimate (negative, not integers, absurd)."""
    retries: tuple[RetryEvent, ...] = field(default_factory=tuple)


class _Failed(Exception):
    """One attempt failed; ``retryable`` says whether another may succeed."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        model_ran: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.model_ran = model_ran


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class ChatClient:
    """``complete(messages)`` with retries, deadlines and usage; one instance per worker."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self._sleep = sleep
        self._rng = rng or random.Random()
        headers = {"Accept": "application/json"}
        if settings.api_key is not None:
            headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
        self._http = httpx.Client(
            base_url=settings.base_url.rstrip("/") + "/", headers=headers, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public -----------------------------------------------------------
    def complete(
        self,
        messages: Sequence[Message],
        *,
        response_format: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        """One chat completion, retried on 429/5xx/timeouts; raises LLMError when it gives up."""
        s = self.settings
        body: dict[str, Any] = {
            "model": s.model,
            "messages": list(messages),
            "max_tokens": max_tokens or s.max_tokens,
            "reasoning_effort": s.reasoning_effort,
            "stream": s.stream,
        }
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if response_format is not None:
            body["response_format"] = response_format
        if s.stream:
            body["stream_options"] = {"include_usage": True}
        started = time.monotonic()
        total_deadline = started + s.total_deadline_s
        retries: list[RetryEvent] = []
        calls = 0
        attempt = 0
        while True:
            attempt += 1
            try:
                result = self._attempt(body, min(time.monotonic() + s.call_deadline_s, total_deadline))
            except _Failed as failure:
                calls += int(failure.model_ran)
                wait = self._wait_before_retry(failure, attempt, total_deadline)
                if wait is None:
                    spent = LLMUsage(calls=calls, seconds=time.monotonic() - started, model=s.model)
                    raise LLMError(failure.kind, str(failure), failure.status, spent, retries) from None
                retries.append(RetryEvent(attempt, failure.kind, failure.status, wait, failure.retry_after))
                self._sleep(wait)
                continue
            usage = result.usage
            usage = LLMUsage(
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                calls=calls + 1,
                seconds=time.monotonic() - started,
                model=usage.model,
            )
            return ChatResult(
                text=result.text,
                finish_reason=result.finish_reason,
                usage=usage,
                reasoning=result.reasoning,
                usage_estimated=result.usage_estimated,
                usage_anomaly=result.usage_anomaly,
                retries=tuple(retries),
            )

    # -- retry policy -------------------------------------------------------
    def _wait_before_retry(self, failure: _Failed, attempt: int, total_deadline: float) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        s = self.settings
        if not failure.retryable or attempt > s.max_retries:
            return None
        if failure.retry_after is not None:
            if failure.retry_after > s.max_retry_after_s:
                return None
            wait = failure.retry_after * (1.0 + 0.1 * self._rng.random())
        else:
            cap = min(s.backoff_max_s, s.backoff_base_s * 2 ** (attempt - 1))
            wait = cap / 2 + self._rng.uniform(0.0, cap / 2)  # "equal jitter": spread, never zero
        if time.monotonic() + wait >= total_deadline:
            return None
        return wait

    # -- one attempt ------------------------------------------------------------
    def _attempt(self, body: dict[str, Any], deadline: float) -> ChatResult:
        s = self.settings
        remaining = max(0.001, deadline - time.monotonic())
        timeout = httpx.Timeout(
            connect=min(s.connect_timeout_s, remaining),
            read=min(s.read_timeout_s, remaining),
            write=min(s.connect_timeout_s, remaining),
            pool=min(s.connect_timeout_s, remaining),
        )
        try:
            with self._http.stream("POST", "chat/completions", json=body, timeout=timeout) as resp:
                if resp.status_code != 200:
                    raise self._status_failure(resp)
                if body.get("stream"):
                    return self._read_stream(resp, body, deadline)
                raw = b"".join(self._chunks(resp, deadline))
        except httpx.TimeoutException as exc:
            # A connect timeout means the server never saw the request; a read timeout may mean it is generating.
            ran = not isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout)
            raise _Failed(
                "timeout",
                f"no answer within the timeout ({type(exc).__name__})",
                retryable=True,
                model_ran=ran,
            ) from None
        except httpx.TransportError as exc:
            raise _Failed("transport", f"{type(exc).__name__}: {exc}", retryable=True) from None
        return self._parse_body(raw, body)

    def _chunks(self, resp: httpx.Response, deadline: float) -> Iterator[bytes]:
        read = 0
        for chunk in resp.iter_bytes():
            if time.monotonic() > deadline:
                raise _Failed(
                    "timeout",
                    "the answer did not finish before the call deadline",
                    retryable=True,
                    model_ran=True,
                )
            read += len(chunk)
            self._check_size(read)
            yield chunk

    def _check_size(self, read: int) -> None:
        if read > self.settings.max_response_bytes:
            raise _Failed(
                "oversized",
                f"the answer exceeds {self.settings.max_response_bytes} bytes; stopped reading it",
                retryable=False,
                model_ran=True,
            )

    def _status_failure(self, resp: httpx.Response) -> _Failed:
        resp.read()
        status = resp.status_code
        detail = resp.text[:300].strip()
        if status == 429:
            return _Failed(
                "rate_limited",
                f"429 rate limited: {detail}",
                retryable=True,
                status=status,
                retry_after=parse_retry_after(resp.headers),
            )
        if status >= 500 or status in RETRYABLE_STATUS:
            return _Failed(
                "server_error",
                f"{status}: {detail}",
                retryable=True,
                status=status,
                retry_after=parse_retry_after(resp.headers),
            )
        return _Failed("http_error", f"{status}: {detail}", retryable=False, status=status)

    def _parse_body(self, raw: bytes, body: dict[str, Any]) -> ChatResult:
        try:
            data = json.loads(raw)
        except ValueError:
            raise _Failed(
                "bad_response", f"not JSON: {raw[:200]!r}", retryable=True, model_ran=True
            ) from None
        try:
            reply = parse_reply(data)
        except ReplyError as exc:
            raise _Failed(exc.kind, str(exc), retryable=exc.kind != "wrong_shape", model_ran=True) from None
        assert reply.choices
        choice = reply.choices[0]
        message = choice.message
        refused = refusal_of(message, choice.finish_reason)
        if refused is not None:
            raise _Failed("refusal", f"the model refused: {refused}", retryable=False, model_ran=True)
        text = (message.content if message else None) or ""
        reasoning = (message.reasoning_content or message.reasoning) if message else None
        usage, estimated, anomaly = self._usage(reply.usage, body, text, reasoning, reply.model)
        return ChatResult(text, choice.finish_reason, usage, reasoning, estimated, anomaly)

    def _read_stream(self, resp: httpx.Response, body: dict[str, Any], deadline: float) -> ChatResult:
        parts: list[str] = []
        thoughts: list[str] = []
        finish: str | None = None
        reported: dict[str, Any] | None = None
        model: str | None = None
        read, choices_seen = 0, 0
        for line in resp.iter_lines():
            if time.monotonic() > deadline:
                raise _Failed(
                    "timeout",
                    "the stream did not finish before the call deadline",
                    retryable=True,
                    model_ran=True,
                )
            read += len(line) + 1
            self._check_size(read)
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            try:
                chunk = parse_reply(json.loads(payload), streamed_chunk=True)
            except ValueError:
                raise _Failed(
                    "bad_response", f"bad stream chunk: {payload[:120]!r}", retryable=True, model_ran=True
                ) from None
            except ReplyError as exc:
                raise _Failed(exc.kind, str(exc), retryable=False, model_ran=True) from None
            model = chunk.model or model
            reported = chunk.usage or reported
            for choice in chunk.choices or []:
                choices_seen += 1
                delta = choice.delta or choice.message
                finish = choice.finish_reason or finish
                refused = refusal_of(delta, choice.finish_reason)
                if refused is not None:
                    raise _Failed("refusal", f"the model refused: {refused}", retryable=False, model_ran=True)
                if delta is not None:
                    parts.append(delta.content or "")
                    thoughts.append(delta.reasoning_content or delta.reasoning or "")
        if not choices_seen:
            raise _Failed("empty_choices", "the stream carried no choices", retryable=True, model_ran=True)
        text, reasoning = "".join(parts), "".join(thoughts) or None
        usage, estimated, anomaly = self._usage(reported, body, text, reasoning, model)
        return ChatResult(text, finish, usage, reasoning, estimated, anomaly)

    def _usage(
        self, reported: Any, body: dict[str, Any], text: str, reasoning: str | None, model: str | None
    ) -> tuple[LLMUsage, bool, str | None]:
        """(usage, estimated, anomaly): the server's figures when plausible, else our estimate."""
        name = (model or self.settings.model)[:200]
        thought = estimate_tokens(reasoning or "")
        estimate = UsageCheck(
            estimate_chat_tokens(body["messages"]), estimate_tokens(text) + thought, thought
        )
        checked, estimated = estimate, True
        if isinstance(reported, dict) and "prompt_tokens" in reported:
            checked = check_usage(reported, estimate, int(body.get("max_tokens") or self.settings.max_tokens))
            estimated = checked.anomaly is not None
        usage = LLMUsage(
            prompt_tokens=checked.prompt_tokens,
            completion_tokens=checked.completion_tokens,
            reasoning_tokens=checked.reasoning_tokens,
            calls=1,
            model=name,
        )
        return usage, estimated, checked.anomaly
