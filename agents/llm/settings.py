"""Settings of the LLM client, built once from flags and the environment.

The API key is read here and nowhere else (``from_env``), so the rest of the
code receives it explicitly and tests never depend on the caller's shell.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

ReasoningEffort = Literal["low", "medium", "high"]
DEFAULT_MODEL = "openai/gpt-oss-120b"
API_KEY_VARIABLES = ("BLOCKOPT_LLM_API_KEY", "OPENAI_API_KEY")


class LLMSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field("http://127.0.0.1:8000/v1", description="OpenAI-compatible base URL (ends in /v1)")
    model: str = Field(DEFAULT_MODEL, description="model name as the server knows it")
    api_key: SecretStr | None = Field(None, description="bearer token; None sends no Authorization header")
    reasoning_effort: ReasoningEffort = Field("low", description="GPT-OSS reasoning level")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="None lets the server choose")
    max_tokens: int = Field(4096, ge=16, description="completion cap per call (reasoning included)")
    structured_output: bool = Field(True, description="ask for response_format=json_schema")
    stream: bool = Field(False, description="use server-sent events (the deadline then bounds slow streams)")
    connect_timeout_s: float = Field(5.0, gt=0.0)
    read_timeout_s: float = Field(120.0, gt=0.0, description="longest silence from the server")
    call_deadline_s: float = Field(300.0, gt=0.0, description="one request, from sending to the last byte")
    total_deadline_s: float = Field(600.0, gt=0.0, description="one request with all its retries")
    max_retries: int = Field(3, ge=0, le=20, description="retries on 429, 5xx, timeouts, dropped connections")
    backoff_base_s: float = Field(0.5, ge=0.0, description="first backoff step; doubles per retry")
    backoff_max_s: float = Field(20.0, ge=0.0, description="cap of one backoff wait")
    max_retry_after_s: float = Field(60.0, ge=0.0, description="a longer Retry-After gives up instead")
    repair_turns: int = Field(1, ge=0, le=3, description="follow-up turns quoting the validator's error")
    max_response_bytes: int = Field(
        2_000_000, ge=1024, description="a longer answer is cut off and given up as 'oversized' (bytes read)"
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMSettings:
        """Settings from flags (``overrides``, None values ignored) plus the API key from the environment."""
        env = os.environ if env is None else env
        values = {k: v for k, v in overrides.items() if v is not None}
        if "api_key" not in values:
            key = next((env[name] for name in API_KEY_VARIABLES if env.get(name)), None)
            if key is not None:
                values["api_key"] = key
        return cls.model_validate(values)
