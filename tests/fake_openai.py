"""A real OpenAI-compatible chat-completions server for tests and demos, with injectable faults.

Its answers come from the task's own heuristic proposer applied to the
contract embedded in the prompt (``<contract>`` tags, see
``agents.llm.prompts``), wrapped as a model reply with realistic usage.
Faults (per request): ``none``, ``prose``, ``fence``, ``malformed``,
``truncated``, ``wrong_block``, ``illegal``, ``rate_limit``, ``server_error``,
``hang``, ``slow_stream``; ``mix`` draws sound answers and faults by seed.
Hostile modes (``HOSTILE``, each with the reason the proposer must record in
``HOSTILE_REASONS``): an oversized answer, prose with no JSON, a refusal (as
the ``refusal`` field or as text), an empty ``choices``, a body or a value of
the wrong shape, NaN/Infinity and numbers beyond a float, JSON nested past the
decoder's limit, and usage figures that are negative, absurd or not numbers.

Run it by hand (Ctrl-C stops it):

    .venv/bin/python -m tests.fake_openai --port 8009 --faults mix --seed 1 \\
        --task 'quadratic={"blocks": 16, "dim": 4}'

then point the ``llm`` proposer at ``http://127.0.0.1:8009/v1``. A fault
schedule such as ``--faults malformed,none`` serves the listed faults in
order and repeats the last one. ``POST /admin/faults`` changes the schedule
of a running server (tests use it to share one server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from agents.llm.prompts import recover_contract
from agents.llm.tokens import estimate_chat_tokens, estimate_tokens
from tasks.base import Proposer, Task
from tasks.registry import create_task

CONTENT_FAULTS = ("prose", "fence", "malformed", "truncated", "wrong_block", "illegal")
TRANSPORT_FAULTS = ("rate_limit", "server_error")
SLOW_FAULTS = ("hang", "slow_stream")
HOSTILE_REASONS: dict[str, str | None] = {
    "oversized": "oversized",
    "prose_only": "malformed_json",
    "refusal": "refusal",
    "refusal_text": "refusal",
    "empty_choices": "empty_choices",
    "body_shape": "wrong_shape",
    "not_object": "malformed_json",
    "value_shape": "bad_shape",
    "nan": "non_finite",
    "infinity": "non_finite",
    "huge_number": "non_finite",
    "deep_nesting": "malformed_json",
    "truncated": "truncated",
    "wrong_block": "wrong_block",
    "negative_usage": None,
    "absurd_usage": None,
    "string_usage": None,
}
"""Each hostile mode and the failure the LLM proposer records for it (None: a usable answer whose usage is
flagged and replaced by the estimate)."""
HOSTILE = tuple(m for m in HOSTILE_REASONS if m not in CONTENT_FAULTS)
FAULTS = ("none", *CONTENT_FAULTS, *TRANSPORT_FAULTS, *SLOW_FAULTS, *HOSTILE)
REASONING_TOKENS = {"low": 160, "medium": 700, "high": 2600}
"""Hidden reasoning tokens reported per call by effort (GPT-OSS order of magnitude; ±25 % noise)."""


class FakeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    faults: str = Field("none", description="a fault, a comma-separated schedule, or 'mix'")
    seed: int = 0
    mix_sound: float = Field(0.5, ge=0.0, le=1.0, description="share of sound answers in 'mix'")
    mix_slow: bool = Field(False, description="let 'mix' draw hang and slow_stream too")
    model: str = "openai/gpt-oss-120b"
    api_key: str | None = None
    retry_after_s: int = Field(1, ge=0, description="Retry-After header of a 429")
    retry_after_ms: int | None = Field(
        None, ge=0, description="retry-after-ms header of a 429 (None: absent)"
    )
    hang_s: float = Field(30.0, ge=0.0)
    slow_chunk_s: float = Field(0.5, ge=0.0)
    reject_response_format: bool = Field(False, description="answer 400 to json_schema requests")
    oversized_bytes: int = Field(4_000_000, ge=1, description="size of the 'oversized' answer's text")


class FakeLLM:
    """The server's state: tasks by kind, their heuristic proposers, the fault schedule and counters."""

    def __init__(self, tasks: Mapping[str, Task[Any]], config: FakeConfig | None = None) -> None:
        self.tasks = dict(tasks)
        self.proposers: dict[str, Proposer] = {
            kind: t.make_proposer(t.ProposerParams(), seed=0) for kind, t in self.tasks.items()
        }
        self.lock = threading.Lock()
        self.served: Counter[str] = Counter()
        self.requests = 0
        self.configure(config or FakeConfig())

    def configure(self, config: FakeConfig) -> None:
        schedule = [f.strip() for f in config.faults.split(",") if f.strip()] or ["none"]
        for name in schedule:
            if name not in FAULTS and name != "mix":
                raise ValueError(f"unknown fault {name!r} (known: {', '.join(FAULTS)}, mix)")
        with self.lock:
            self.config = config
            self._schedule = schedule
            self._rng = random.Random(config.seed)
            self.served.clear()
            self.requests = 0

    def next_fault(self) -> str:
        with self.lock:
            i = self.requests
            self.requests += 1
            name = self._schedule[min(i, len(self._schedule) - 1)]
            if name == "mix":
                if self._rng.random() < self.config.mix_sound:
                    name = "none"
                else:
                    pool = CONTENT_FAULTS + TRANSPORT_FAULTS + (SLOW_FAULTS if self.config.mix_slow else ())
                    name = self._rng.choice(pool)
            self.served[name] += 1
            return name

    def task_for(self, contract: Mapping[str, Any]) -> str:
        data = contract.get("data") or {}
        kind = data.get("kind") if isinstance(data, Mapping) else None
        if kind in self.tasks:
            return str(kind)
        if len(self.tasks) == 1:
            return next(iter(self.tasks))
        raise LookupError(f"no task of kind {kind!r} is loaded")

    def answer(self, contract: Mapping[str, Any]) -> dict[str, Any]:
        """The heuristic's proposal for the contract, as the JSON object a model should return."""
        kind = self.task_for(contract)
        with self.lock:  # heuristic proposers may keep state (noise rng, staleness memory)
            draft = self.proposers[kind].propose(contract)
        block = int(contract["block"])
        if draft is None:
            return {"block": block, "value": None, "predicted_improvement": 0.0}
        return {"block": block, "value": draft.value, "predicted_improvement": draft.predicted_improvement}


def _illegal(value: Any) -> Any:
    if isinstance(value, list) and value:
        return value[:-1]
    return "not a block value"


def render_reply(answer: dict[str, Any], fault: str) -> tuple[str, str]:
    """(text, finish_reason) for a content fault applied to a sound answer."""
    if fault == "wrong_block":
        answer = {**answer, "block": answer["block"] + 1}
    if fault == "illegal":
        answer = {**answer, "value": _illegal(answer["value"])}
    text = json.dumps(answer)
    if fault == "prose":
        return (
            "I solved the block's surrogate exactly. Here is my proposal:\n"
            f"{text}\nThis should lower the objective.",
            "stop",
        )
    if fault == "fence":
        return f"Proposal for the block:\n```json\n{json.dumps(answer, indent=2)}\n```\n", "stop"
    if fault == "malformed":
        return text.replace('"', "'").rstrip("}") + ",}", "stop"
    if fault == "truncated":
        return text[: max(1, len(text) // 2)], "length"
    return hostile_text(answer, fault) or text, "stop"


def hostile_text(answer: dict[str, Any], fault: str) -> str | None:
    """The reply text of a hostile mode that lives in the text (None: the mode is elsewhere)."""
    if fault == "prose_only":
        return "The block already looks optimal to me, so I would keep it as it is."
    if fault == "refusal_text":
        return "I'm sorry, but I can't help with that request."
    if fault == "not_object":
        return json.dumps([answer["value"]])
    if fault == "value_shape":
        return json.dumps({**answer, "value": {"nested": {"deeper": [answer["value"]]}}})
    if fault == "nan":
        return json.dumps({**answer, "value": [float("nan")]})
    if fault == "infinity":
        return json.dumps({**answer, "predicted_improvement": float("inf"), "value": [float("-inf")]})
    if fault == "huge_number":
        return '{"block": %d, "value": [%s], "predicted_improvement": 1}' % (answer["block"], "9" * 400)
    if fault == "deep_nesting":
        return '{"block": %d, "value": %s' % (answer["block"], "[" * 20_000)
    return None


def hostile_usage(usage: dict[str, Any], fault: str) -> dict[str, Any]:
    if fault == "negative_usage":
        return {**usage, "prompt_tokens": -1200, "total_tokens": -1}
    if fault == "absurd_usage":
        return {**usage, "completion_tokens": 10**15}
    if fault == "string_usage":
        return {**usage, "prompt_tokens": "a lot", "completion_tokens_details": "none"}
    return usage


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}}, status, headers=headers
    )


def create_app(fake: FakeLLM) -> FastAPI:
    app = FastAPI(title="fake OpenAI-compatible server (blockopt tests)")

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": fake.config.model, "object": "model", "owned_by": "blockopt-tests"}],
        }

    @app.post("/admin/faults")
    async def set_faults(config: FakeConfig) -> Any:
        try:
            fake.configure(config)
        except ValueError as exc:
            return _error(422, str(exc), "invalid_request_error")
        return {"faults": config.faults, "seed": config.seed}

    @app.get("/admin/stats")
    async def stats() -> dict[str, Any]:
        return {"requests": fake.requests, "served": dict(fake.served)}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        cfg = fake.config
        if cfg.api_key is not None and request.headers.get("authorization") != f"Bearer {cfg.api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_request_error")
        try:
            body = await request.json()
            messages = body["messages"]
            assert isinstance(messages, list) and messages
        except Exception:  # noqa: BLE001 - any malformed request is a 400, as on a real server
            return _error(
                400, "the body must be JSON with a non-empty 'messages' list", "invalid_request_error"
            )
        if body.get("model") != cfg.model:
            return _error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        if cfg.reject_response_format and body.get("response_format"):
            return _error(400, "response_format json_schema is not supported", "invalid_request_error")
        contract = recover_contract(messages)
        if contract is None:
            return _error(400, "no <contract> found in the user messages", "invalid_request_error")
        fault = fake.next_fault()
        if fault == "rate_limit":
            headers = {"Retry-After": str(cfg.retry_after_s)}
            if cfg.retry_after_ms is not None:
                headers["retry-after-ms"] = str(cfg.retry_after_ms)
            return _error(429, "Rate limit reached for requests", "rate_limit_error", headers)
        if fault == "server_error":
            return _error(500, "The server had an error while processing your request.", "server_error")
        if fault == "hang":
            await asyncio.sleep(cfg.hang_s)
        try:
            answer = await asyncio.to_thread(fake.answer, contract)
        except (LookupError, KeyError, ValueError) as exc:
            return _error(400, f"cannot answer this contract: {exc}", "invalid_request_error")
        text, finish = render_reply(answer, fault)
        if fault == "oversized":
            text = json.dumps(answer) + " " * cfg.oversized_bytes
        rng = random.Random(f"{cfg.seed}:{fake.requests}")
        effort = body.get("reasoning_effort") or "medium"
        reasoning = int(REASONING_TOKENS.get(effort, 700) * rng.uniform(0.75, 1.25))
        completion = estimate_tokens(text) + reasoning
        if finish == "length":
            completion = int(body.get("max_tokens") or completion)
        usage = {
            "prompt_tokens": estimate_chat_tokens(messages),
            "completion_tokens": completion,
            "total_tokens": estimate_chat_tokens(messages) + completion,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }
        usage = hostile_usage(usage, fault)
        thought = (
            f"Block {answer['block']}: minimize the block objective given the correction; answer as JSON."
        )
        rid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            delay = cfg.slow_chunk_s if fault == "slow_stream" else 0.0
            return StreamingResponse(
                _sse(rid, cfg.model, thought, text, finish, usage if include_usage else None, delay, fault),
                media_type="text/event-stream",
            )
        if fault == "slow_stream":
            await asyncio.sleep(cfg.slow_chunk_s * max(1, len(text) // 8))
        message: Any = {"role": "assistant", "content": text, "reasoning_content": thought}
        choices: list[Any] = [{"index": 0, "finish_reason": finish, "message": message}]
        if fault == "refusal":
            message.update(content=None, refusal="I can't assist with that.")
        elif fault == "empty_choices":
            choices = []
        elif fault == "body_shape":
            choices = [{"index": 0, "finish_reason": finish, "message": text}]
        return JSONResponse(
            {
                "id": rid,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": cfg.model,
                "choices": choices,
                "usage": usage,
            }
        )

    return app


async def _sse(
    rid: str,
    model: str,
    thought: str,
    text: str,
    finish: str,
    usage: dict[str, Any] | None,
    delay: float,
    fault: str = "none",
) -> AsyncIterator[bytes]:
    def chunk(delta: Any, finish_reason: str | None = None, **extra: Any) -> bytes:
        choices = (
            [] if fault == "empty_choices" else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        )
        payload = {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(payload)}\n\n".encode()

    yield chunk({"role": "assistant", "reasoning_content": thought})
    if fault == "refusal":
        yield chunk({"refusal": "I can't assist with that."}, "stop")
        yield b"data: [DONE]\n\n"
        return
    if fault == "body_shape":
        yield chunk(text[:8])
    step = 4096 if fault in ("oversized", "deep_nesting") else 8
    for i in range(0, len(text), step):
        if delay:
            await asyncio.sleep(delay)
        yield chunk({"content": text[i : i + step]})
    yield chunk({}, finish)
    if usage is not None:
        body = {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": usage,
        }
        yield f"data: {json.dumps(body)}\n\n".encode()
    yield b"data: [DONE]\n\n"


class ServerThread:
    """Runs the app with uvicorn on a free loopback port in a daemon thread (for test fixtures)."""

    def __init__(self, fake: FakeLLM, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fake = fake
        config = uvicorn.Config(
            create_app(fake),
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=1,
            lifespan="off",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="fake-openai", daemon=True)
        self.host = host

    def start(self, wait_s: float = 10.0) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + wait_s
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


def _parse_task(spec: str) -> tuple[str, Task[Any]]:
    kind, _, params = spec.partition("=")
    return kind, create_task(kind, json.loads(params) if params else {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fake_openai", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8009)
    parser.add_argument("--faults", default="none", help="a fault, a comma-separated schedule, or mix")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mix-sound", type=float, default=0.5)
    parser.add_argument("--mix-slow", action="store_true", help="mix also draws hang and slow_stream")
    parser.add_argument("--model", default="openai/gpt-oss-120b")
    parser.add_argument("--api-key", default=None, help="require this bearer token")
    parser.add_argument("--hang-s", type=float, default=30.0)
    parser.add_argument(
        "--task",
        action="append",
        default=[],
        metavar="KIND[=JSON]",
        help="task whose heuristic answers (repeatable; default: quadratic)",
    )
    args = parser.parse_args(argv)
    tasks = dict(_parse_task(s) for s in (args.task or ["quadratic"]))
    config = FakeConfig(
        faults=args.faults,
        seed=args.seed,
        mix_sound=args.mix_sound,
        mix_slow=args.mix_slow,
        model=args.model,
        api_key=args.api_key,
        hang_s=args.hang_s,
    )
    fake = FakeLLM(tasks, config)
    print(
        f"fake OpenAI server on http://{args.host}:{args.port}/v1 serving {args.model} "
        f"for {', '.join(tasks)}; faults: {args.faults}",
        flush=True,
    )
    uvicorn.run(create_app(fake), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
