"""Budget-aware stopping (docs/architecture.md §5): an LLM team stops as ``diminishing_returns`` once the
forecast gain of the next rounds is worth less than its threshold per 1,000 tokens; a threshold the team
clears lets the task run to ``optimal``. The LLM is the fake OpenAI-protocol server on loopback."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agents.worker import Worker, WorkerConfig
from tests.conftest import Coordinator
from tests.fake_openai import ServerThread
from tests.llm_support import (
    QUAD_PARAMS,
    quad_llm_server,  # noqa: F401  (the module's "server" fixture)
)

pytestmark = pytest.mark.timeout(180)

FAST = {
    "connect_timeout_s": "2",
    "read_timeout_s": "5",
    "call_deadline_s": "10",
    "total_deadline_s": "20",
    "backoff_base_s": "0.01",
    "backoff_max_s": "0.05",
}


def run_team(coord: Coordinator, server: ServerThread, stop_when: dict[str, Any]) -> dict[str, Any]:
    task = coord.create_task(params=QUAD_PARAMS, budgets={"rounds": 300}, stop_when=stop_when)
    worker = Worker(
        WorkerConfig(
            coordinator=coord.url,
            task=task["id"],
            join_token=task["join_token"],
            proposer="llm",
            proposer_options={"base_url": server.base_url, **FAST},
            name="llm",
            poll_wait=0.5,
        )
    )
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        view = coord.wait_for(task["id"], lambda v: v["status"] != "running", timeout=150)
    finally:
        worker.stop.set()
        thread.join(10)
    assert view["forecast"] is not None
    return dict(coord.admin.get(f"/v1/tasks/{task['id']}/report").json())


def test_llm_team_stops_when_the_forecast_gain_per_1k_tokens_falls_below_the_threshold(
    coordinator: Coordinator, server: ServerThread
) -> None:
    report = run_team(coordinator, server, {"gain_per_1k_tokens": 1e6, "horizon_rounds": 3})
    assert report["status"] == "diminishing_returns", report["status_reason"]
    assert "per 1,000 tokens" in report["status_reason"]
    forecast = report["forecast"]  # the forecast that justified the stop (no round ran after it)
    assert forecast["gain_per_1k_tokens"] is not None and forecast["gain_per_1k_tokens"] < 1e6
    assert forecast["limit"] is not None and forecast["eta_rounds"] is not None
    assert report["usage"]["tokens"] > 0 and report["rounds"] >= 6  # min_rounds: the forecast needs some


def test_a_threshold_the_team_clears_lets_it_reach_the_optimum(
    coordinator: Coordinator, server: ServerThread
) -> None:
    report = run_team(coordinator, server, {"gain_per_1k_tokens": 1e-12})
    assert report["status"] == "optimal"


def test_stop_when_needs_a_threshold(coordinator: Coordinator) -> None:
    r = coordinator.admin.post(
        "/v1/tasks", json={"kind": "quadratic", "params": QUAD_PARAMS, "stop_when": {"horizon_rounds": 3}}
    )
    assert r.status_code == 422 and "gain_per_1k_tokens or gain_per_agent_second" in r.text
