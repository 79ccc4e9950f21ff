"""End to end on the quadratic: LLM agents behind a faulty server still converge; simulated agents cost time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agents.llm import (
    LLMProposer,
    ServingRates,
    SimulatedLLMProposer,
    make_llm_proposer,
    make_simulated_proposer,
)
from agents.llm.usage import LLMUsage
from coordinator.engine.contract import contract_envelope
from coordinator.engine.records import Snapshot, Usage
from coordinator.engine.rounds import EngineSettings, RoundEngine
from coordinator.reports.ledger import RunLedger, relative_gap
from coordinator.runtime.inproc import blocks_for_round, proposal_of
from tasks.base import Proposer, Task
from tests.fake_openai import FakeConfig, ServerThread
from tests.llm_support import (
    QUAD_PARAMS,
    fast_settings,
    first_contract,
    quad_llm_server,  # noqa: F401  (the module's "server" fixture)
    quad_task,
)

pytestmark = pytest.mark.timeout(120)


def run_loop(
    task: Task[Any], proposers: Sequence[Proposer], max_rounds: int, target: float
) -> tuple[Snapshot, RunLedger, int]:
    """The in-process loop of ``run_inproc`` with injected proposers (it builds its own heuristics)."""
    engine = RoundEngine(task, EngineSettings(merge_policy="checked"))
    snap = engine.initial_snapshot()
    ledger = RunLedger(engine.reference, snap.objective, engine.tolerance)
    for r in range(max_rounds):
        proposals = []
        for agent, block in enumerate(blocks_for_round(task.n_blocks, len(proposers), r)):
            draft = proposers[agent].propose(contract_envelope(task, snap, block, {"rounds": max_rounds - r}))
            if draft is None:
                continue
            usage = Usage.model_validate(draft.info["usage"])
            proposals.append(proposal_of(draft, f"agent-{agent}", snap.version, usage))
        outcome = engine.run_round(snap, proposals, r)
        snap = outcome.snapshot
        ledger.add_round(outcome.record, proposals, outcome.verdicts)
        if relative_gap(snap.objective, engine.reference) <= target:
            return snap, ledger, r + 1
    return snap, ledger, max_rounds


def test_mix_of_faulty_and_sound_answers_still_converges(server: ServerThread) -> None:
    server.fake.configure(FakeConfig(faults="mix", seed=7, mix_sound=0.3, retry_after_s=0, retry_after_ms=5))
    task = quad_task()
    agents: list[LLMProposer] = [
        make_llm_proposer("quadratic", QUAD_PARAMS, fast_settings(server.base_url, stream=a % 2 == 1))
        for a in range(4)
    ]
    snap, ledger, rounds = run_loop(task, agents, max_rounds=80, target=1e-8)
    assert relative_gap(snap.objective, ledger.reference) <= 1e-8, f"not converged after {rounds} rounds"
    served = server.fake.served
    assert served["none"] > 0 and sum(n for f, n in served.items() if f != "none") > 0
    failures = sum((sum(a.failures.values()) for a in agents))
    repairs = sum((sum(a.repairs.values()) for a in agents))
    print(f"rounds {rounds}, served {dict(served)}, failures {failures}, repairs {repairs}")
    assert failures > 0 and repairs > 0  # the mix really exercised both paths
    spent = sum((a.total_usage for a in agents), LLMUsage())
    # The ledger counts usage of submitted proposals; failed leases cost tokens too (the worker reports them).
    assert 0 < ledger.usage.tokens <= spent.tokens and ledger.usage.calls <= spent.calls
    assert all(r.accounting_violations == 0 for r in ledger.records)


def test_simulated_proposer_reports_virtual_latency() -> None:
    task = quad_task()
    rates = ServingRates()
    sim = make_simulated_proposer("quadratic", QUAD_PARAMS, seed=0, rates=rates, sleep=False)
    draft = sim.propose(first_contract(task))
    assert draft is not None and draft.info["simulated"] is True
    u = sim.last_usage
    assert u.model == "simulated:openai/gpt-oss-120b" and u.calls == 1
    assert u.seconds == pytest.approx(rates.latency(u.prompt_tokens, u.completion_tokens))
    assert sim.virtual_seconds == pytest.approx(u.seconds)
    assert u.completion_tokens > rates.reasoning_tokens["low"]


def test_simulated_output_grows_with_the_block_and_decode_slows_with_sharing() -> None:
    small = make_simulated_proposer("quadratic", {"blocks": 4, "dim": 2}, sleep=False)
    large = make_simulated_proposer("quadratic", {"blocks": 4, "dim": 32}, sleep=False)
    small.propose(first_contract(_task(2), block=1))
    large.propose(first_contract(_task(32), block=1))
    assert large.last_usage.completion_tokens > small.last_usage.completion_tokens + 100
    assert large.last_usage.prompt_tokens > small.last_usage.prompt_tokens
    shared = ServingRates(concurrent_streams=4)
    assert shared.decode_rate() == pytest.approx(128.0, rel=0.02)  # the figure the rates were fitted to
    assert shared.latency(500, 300) > ServingRates().latency(500, 300)


def _task(dim: int) -> Task[Any]:
    from tasks.registry import create_task

    return create_task("quadratic", {"blocks": 4, "dim": dim})


def test_simulated_proposer_sleeps_the_rest_of_the_latency() -> None:
    waits: list[float] = []
    task = quad_task()
    inner = task.make_proposer(task.ProposerParams(), seed=0)
    sim = SimulatedLLMProposer(inner, "quadratic", effort="high", sleeper=waits.append)
    assert sim.propose(first_contract(task)) is not None
    assert len(waits) == 1 and waits[0] > 3000 / 180 * 0.9  # high effort: thousands of reasoning tokens
    assert sim.last_usage.seconds >= waits[0]
