"""LLM agents through the service: usage honesty, budgets (429, budget_exhausted), trajectories, CLI flags."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from agents.llm import LLMProposer
from agents.worker import Worker, WorkerConfig
from blockopt.cli import UsageError, build_parser, proposer_options
from tests.conftest import Coordinator
from tests.fake_openai import FakeConfig, ServerThread
from tests.llm_support import (
    QUAD_PARAMS,
    quad_llm_server,  # noqa: F401  (the module's "server" fixture)
)

pytestmark = pytest.mark.timeout(120)

FAST = {
    "connect_timeout_s": "2",
    "read_timeout_s": "5",
    "call_deadline_s": "10",
    "total_deadline_s": "20",
    "backoff_base_s": "0.01",
    "backoff_max_s": "0.05",
}


def llm_worker(coord: Coordinator, task: dict[str, Any], base_url: str, name: str = "llm") -> Worker:
    options = {"base_url": base_url, **FAST}
    return Worker(
        WorkerConfig(
            coordinator=coord.url,
            task=task["id"],
            join_token=task["join_token"],
            proposer="llm",
            proposer_options=options,
            name=name,
            poll_wait=0.5,
        )
    )


def run_in_thread(worker: Worker) -> threading.Thread:
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    return thread


def lines(coord: Coordinator, task_id: str) -> list[dict[str, Any]]:
    r = coord.admin.get(f"/v1/tasks/{task_id}/trajectories")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in r.text.splitlines() if line]


def test_abandoned_usage_counts_once_and_spends_the_token_budget(coordinator: Coordinator) -> None:
    task = coordinator.create_task(budgets={"tokens": 100, "rounds": 50})
    client, _ = coordinator.join(task)
    lease = client.post(f"/v1/tasks/{task['id']}/leases").json()
    body = {
        "id": "gone-1",
        "block": lease["block"],
        "base_version": lease["version"],
        "outcome": "failed",
        "failure": "malformed_json",
        "reason": "no JSON object",
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "calls": 2, "model": "m-1"},
    }
    first = client.post(f"/v1/tasks/{task['id']}/leases/{lease['lease_id']}/abandon", json=body)
    again = client.post(f"/v1/tasks/{task['id']}/leases/{lease['lease_id']}/abandon", json=body)
    assert first.json()["recorded"] is True and again.json()["recorded"] is False  # a retry is counted once
    view = coordinator.admin.get(f"/v1/tasks/{task['id']}").json()
    assert view["usage"] == {"tokens": 150.0, "calls": 2.0}
    refused = client.post(f"/v1/tasks/{task['id']}/leases")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "budget_exceeded"
    view = coordinator.wait_for(task["id"], lambda v: v["status"] != "running", timeout=10)
    assert view["status"] == "budget_exhausted"
    report = coordinator.admin.get(f"/v1/tasks/{task['id']}/report").json()
    assert report["usage"]["tokens"] == 150 and report["usage"]["by_model"]["m-1"]["calls"] == 2
    assert report["proposals"]["abandoned"] == 1
    assert report["proposals"]["abandoned_by_reason"] == {"malformed_json": 1}
    (line,) = lines(coordinator, task["id"])
    assert line["type"] == "abandoned" and line["code"] == "malformed_json" and line["prompt_tokens"] == 120


def test_llm_worker_reports_every_token_it_spends(coordinator: Coordinator, server: ServerThread) -> None:
    # Two malformed answers (the repair fails too) make the first lease fail; then sound answers.
    server.fake.configure(FakeConfig(faults="malformed,malformed,none"))
    task = coordinator.create_task(params=QUAD_PARAMS, budgets={"rounds": 200})
    worker = llm_worker(coordinator, task, server.base_url)
    thread = run_in_thread(worker)
    view = coordinator.wait_for(task["id"], lambda v: v["status"] != "running", timeout=90)
    worker.stop.set()
    thread.join(10)
    assert view["status"] == "optimal"
    proposer = worker.proposer
    assert isinstance(proposer, LLMProposer) and proposer.failures["malformed_json"] == 1
    report = coordinator.admin.get(f"/v1/tasks/{task['id']}/report").json()
    spent = proposer.total_usage
    # honest accounting: what the coordinator counted is what the model spent, failed lease included
    assert report["usage"]["tokens"] == spent.tokens and report["usage"]["calls"] == spent.calls
    assert report["proposals"]["abandoned"] == worker.stats.abandoned >= 1
    (agent,) = report["usage"]["by_agent"]
    assert report["usage"]["by_model"].keys() == {"openai/gpt-oss-120b"}
    assert report["usage"]["tokens_per_unit_improvement"] > 0
    assert report["usage"]["tokens_per_solved_task"] == spent.tokens
    rows = lines(coordinator, task["id"])
    assert (
        rows[0]["type"] == "abandoned" and rows[0]["code"] == "malformed_json" and rows[0]["agent"] == agent
    )
    assert rows[0]["usage"]["calls"] == 2 and rows[0]["response_chars"] > 0
    merged = [r for r in rows if r["type"] == "proposal" and r["verdict"] == "accepted"]
    assert merged and all(
        r["prompt_tokens"] > 0 and r["response_tokens"] > 0 and r["prompt_chars"] > 0 for r in merged
    )
    for r in merged:
        assert r["error"] == pytest.approx(abs(r["predicted"] - r["delta"]))
    assert sum(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in rows) == spent.tokens


def test_llm_agents_stop_on_a_spent_calls_budget(coordinator: Coordinator, server: ServerThread) -> None:
    server.fake.configure(FakeConfig(faults="none"))
    task = coordinator.create_task(params=QUAD_PARAMS, budgets={"calls": 5, "rounds": 200})
    worker = llm_worker(coordinator, task, server.base_url)
    thread = run_in_thread(worker)
    view = coordinator.wait_for(task["id"], lambda v: v["status"] != "running", timeout=60)
    thread.join(30)
    assert view["status"] == "budget_exhausted" and worker.stats.ended == "budget_exceeded"
    assert view["usage"]["calls"] >= 5
    r = coordinator.client(task["join_token"]).post(f"/v1/tasks/{task['id']}/agents", json={"name": "late"})
    assert r.status_code == 429 and r.json()["error"]["code"] == "budget_exceeded"


def test_trajectories_of_an_unknown_task_is_404(coordinator: Coordinator) -> None:
    assert coordinator.admin.get("/v1/tasks/t-nope/trajectories").status_code == 404


@pytest.mark.parametrize("command", ["agent", "fleet"])
def test_llm_flags_become_proposer_options(command: str) -> None:
    args = build_parser().parse_args(
        [
            command,
            "--coordinator",
            "http://c",
            "--task",
            "t",
            "--proposer",
            "llm",
            "--proposer-option",
            "max_tokens=512",
            "--proposer-option",
            "model=old",
            "--llm-base-url",
            "http://127.0.0.1:9/v1",
            "--llm-model",
            "m-2",
            "--reasoning-effort",
            "high",
        ]
    )
    assert proposer_options(args) == {
        "max_tokens": "512",
        "model": "m-2",
        "base_url": "http://127.0.0.1:9/v1",
        "reasoning_effort": "high",
    }


def test_llm_flags_on_run_and_their_errors() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["run", "routing", "--agents", "6", "--proposer", "simulated-llm", "--reasoning-effort", "medium"]
    )
    assert proposer_options(args, args.agents) == {"reasoning_effort": "medium", "concurrent_streams": "6"}
    with pytest.raises(UsageError, match="need --proposer llm"):
        proposer_options(parser.parse_args(["run", "quadratic", "--llm-model", "x"]))
    with pytest.raises(UsageError, match="llm proposer"):
        proposer_options(
            parser.parse_args(
                ["run", "quadratic", "--proposer", "llm", "--proposer-option", "max_tokens=two"]
            )
        )
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "quadratic", "--reasoning-effort", "extreme"])


def test_a_lease_that_cost_no_model_call_is_booked_under_the_model(coordinator: Coordinator) -> None:
    """A rate-limited or declined lease with zero model calls: its usage row names the LLM, never "llm"."""
    task = coordinator.create_task()
    worker = llm_worker(coordinator, task, "http://127.0.0.1:9/v1")  # never called: no lease is proposed on
    worker.join()
    lease = worker.api.call("POST", f"/v1/tasks/{task['id']}/leases").json()
    worker.lease_id = lease["lease_id"]
    assert isinstance(worker.proposer, LLMProposer) and worker.proposer.last_usage.calls == 0
    worker.abandon(lease, seconds=0.01)
    assert worker.stats.abandoned == 1
    report = coordinator.admin.get(f"/v1/tasks/{task['id']}/report").json()
    assert set(report["usage"]["by_model"]) == {worker.proposer.settings.model}
