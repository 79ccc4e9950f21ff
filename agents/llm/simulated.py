"""Simulated LLM agents for benchmarks without a GPU (docs/architecture.md §9, issue 6 item 4).

The task's heuristic proposer does the thinking; a latency model says how
long GPT-OSS-120B served by vLLM would have taken to produce the same answer:

    latency = overhead + prompt tokens / prefill rate + output tokens / decode rate(c)

Prompt tokens come from the real ``llm`` prompt rendered for the contract
(estimated as in ``tokens.py``); output tokens are the answer's JSON (so they
grow with the size of the block's value) plus the reasoning tokens of the
chosen effort. ``c`` concurrent streams on one GPU slow each stream's decode.
Every result is labelled ``simulated:<model>``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents.llm.prompts import template_for
from agents.llm.settings import DEFAULT_MODEL, ReasoningEffort
from agents.llm.tokens import estimate_chat_tokens, estimate_tokens
from agents.llm.usage import LLMUsage
from tasks.base import Draft, Proposer

RATES_SOURCE = (
    "Decode: MillstoneAI inference benchmark 'gpt-oss-120b MXFP4 on 1x H100 SXM' (vLLM, Jan 2026) reports "
    "511 tok/s peak system throughput at 4 concurrent requests with 1K context, i.e. ~128 tok/s per stream at "
    "c=4; we take 180 tok/s for a single stream and fit batch_slowdown so that c=4 gives 128 tok/s. "
    "Prefill: no single-request H100 TTFT figure for the 120B model was found; the same benchmark series "
    "measures 35 ms TTFT at 1K context for gpt-oss-20b (3.6B active parameters), ~29k tok/s; scaled by "
    "active parameters (5.1B) and rounded down to 10k tok/s. GPUStack's 'Optimizing GPT-OSS-120B throughput "
    "on H100' (vLLM 0.10.2) is consistent: 14-17k total tok/s at high concurrency. Reasoning tokens per "
    "effort are assumptions, not measurements. Replace all of these by `vllm bench serve` on your hardware."
)


class ServingRates(BaseModel):
    """How fast a served model turns prompts into answers; defaults: GPT-OSS-120B, vLLM, one H100."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = DEFAULT_MODEL
    hardware: str = "1x H100 80GB SXM, vLLM, MXFP4 weights"
    prefill_tokens_per_s: float = Field(10_000.0, gt=0.0)
    decode_tokens_per_s: float = Field(180.0, gt=0.0, description="one stream alone on the GPU")
    batch_slowdown: float = Field(0.135, ge=0.0, description="per extra concurrent stream: rate/(1+s(c-1))")
    concurrent_streams: int = Field(1, ge=1, description="agents sharing the GPU (set by the fleet)")
    overhead_s: float = Field(0.05, ge=0.0, description="HTTP, scheduling and sampling setup per call")
    reasoning_tokens: dict[str, int] = Field(
        default_factory=lambda: {"low": 200, "medium": 800, "high": 3000},
        description="hidden reasoning per call by effort (assumed)",
    )
    framing_tokens: int = Field(12, ge=0, description="harmony channel/end tokens around the answer")
    source: str = RATES_SOURCE

    def decode_rate(self) -> float:
        return self.decode_tokens_per_s / (1.0 + self.batch_slowdown * (self.concurrent_streams - 1))

    def latency(self, prompt_tokens: int, output_tokens: int) -> float:
        return (
            self.overhead_s + prompt_tokens / self.prefill_tokens_per_s + output_tokens / self.decode_rate()
        )


class SimulatedLLMProposer(Proposer):
    """Wraps a heuristic proposer so it costs what an LLM agent would: tokens and (slept or virtual) time.

    ``sleep=True`` really waits (the rest of the latency beyond the heuristic's
    own compute time), for wall-clock team-size benchmarks; ``sleep=False``
    only reports the latency as ``seconds`` and adds it to ``virtual_seconds``.
    """

    def __init__(
        self,
        inner: Proposer,
        kind: str,
        rates: ServingRates | None = None,
        *,
        effort: ReasoningEffort = "low",
        sleep: bool = True,
        sleeper: Callable[[float], None] = time.sleep,
        float_digits: int | None = 8,
    ) -> None:
        self.inner = inner
        self.retry_pause = inner.retry_pause
        self.rates = rates or ServingRates()
        self.effort = effort
        self.sleep = sleep
        self._sleeper = sleeper
        self.template = template_for(kind, float_digits)
        self.label = f"simulated:{self.rates.model}"
        self.last_usage = LLMUsage(model=self.label)
        self.total_usage = LLMUsage(model=self.label)
        self.virtual_seconds = 0.0

    def output_tokens(self, block: int, draft: Draft | None) -> int:
        answer = {
            "block": block,
            "value": None if draft is None else draft.value,
            "predicted_improvement": 0.0 if draft is None else draft.predicted_improvement,
        }
        visible = estimate_tokens(json.dumps(answer, separators=(",", ":")))
        return visible + self.rates.reasoning_tokens.get(self.effort, 0) + self.rates.framing_tokens

    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        started = time.monotonic()
        messages = self.template.messages(contract)
        prompt = estimate_chat_tokens(messages)
        draft = self.inner.propose(contract)
        output = self.output_tokens(int(contract["block"]), draft)
        latency = self.rates.latency(prompt, output)
        if self.sleep:
            self._sleeper(max(0.0, latency - (time.monotonic() - started)))
            seconds = max(latency, time.monotonic() - started)
        else:
            seconds = latency
            self.virtual_seconds += latency
        usage = LLMUsage(
            prompt_tokens=prompt,
            completion_tokens=output,
            reasoning_tokens=self.rates.reasoning_tokens.get(self.effort, 0),
            calls=1,
            seconds=seconds,
            model=self.label,
        )
        self.last_usage = usage
        self.total_usage = self.total_usage + usage
        if draft is None:
            return None
        info: dict[str, Any] = {
            **draft.info,
            "usage": usage.as_dict(),
            "simulated": True,
            "prompt_chars": sum(len(m["content"]) for m in messages),
        }
        return Draft(draft.block, draft.value, draft.predicted_improvement, info)
