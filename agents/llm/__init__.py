"""LLM agents: an OpenAI-compatible client, the ``llm`` proposer and its simulated twin.

The worker plugs these in as ``--proposer llm`` / ``--proposer simulated-llm``
through ``make_llm_proposer`` and ``make_simulated_proposer`` (see factory.py).
"""

from __future__ import annotations

from agents.llm.client import ChatClient, ChatResult, LLMError
from agents.llm.factory import make_llm_proposer, make_simulated_proposer
from agents.llm.proposer import LLMProposer, Outcome
from agents.llm.settings import LLMSettings
from agents.llm.simulated import ServingRates, SimulatedLLMProposer
from agents.llm.usage import LLMUsage

__all__ = [
    "ChatClient",
    "ChatResult",
    "LLMError",
    "LLMProposer",
    "LLMSettings",
    "LLMUsage",
    "Outcome",
    "ServingRates",
    "SimulatedLLMProposer",
    "make_llm_proposer",
    "make_simulated_proposer",
]
