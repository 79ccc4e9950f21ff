"""The real path: a uvicorn coordinator and real `blockopt agent` / `fleet` / `serve` processes over HTTP."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from coordinator.api.embedded import bind
from tests.conftest import Coordinator, agent_process, blockopt_process


def metrics(client: httpx.Client) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """name -> {sorted labels -> value} for every sample on /metrics."""
    r = client.get("/metrics")
    assert r.status_code == 200
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def one(series: dict[tuple[tuple[str, str], ...], float], **labels: str) -> float:
    hits = [v for k, v in series.items() if all((name, value) in k for name, value in labels.items())]
    assert len(hits) == 1, (labels, series)
    return hits[0]


def finish(procs: list[subprocess.Popen[bytes]], timeout: float = 30.0) -> list[int]:
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            codes.append(-9)
    return codes


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_agents_solve_quadratic_and_metrics_show_it(coordinator: Coordinator, procs: list[Any]) -> None:
    task = coordinator.create_task(params={"blocks": 12, "dim": 3, "coupling": 0.3}, merge_policy="checked")
    tid = task["id"]
    procs += [agent_process(coordinator, task, "--name", f"w{i}", "--seed", str(i)) for i in range(3)]
    view = coordinator.wait_for(tid, lambda v: v["status"] != "running", timeout=90)
    assert view["status"] == "optimal", view
    assert view["relative_gap"] <= 1e-10
    assert finish(procs) == [0, 0, 0]  # every agent saw the end and exited cleanly
    report = coordinator.admin.get(f"/v1/tasks/{tid}/report").json()
    assert 1 <= report["agents"] <= 3 and report["status"] == "optimal"  # a slow starter may find it done
    prior = report["checks"]["a_priori"]
    assert (
        prior["rounds_held"] == prior["rounds_checked"]
    )  # 3 agents on 12 blocks: mostly precondition_failed
    # (the floor need not be 0 here: a straggler rebased onto a newer version carries a stale correction)

    m = metrics(coordinator.admin)
    assert one(m["blockopt_tasks"], status="optimal") == 1
    received = one(m["blockopt_proposals_received_total"], task=tid)
    assert received == report["proposals"]["received"] > 0
    assert one(m["blockopt_proposals_accepted_total"], task=tid) == report["proposals"]["accepted"]
    assert one(m["blockopt_proposals_repaired_total"], task=tid) == report["proposals"]["repaired"] == 0
    assert one(m["blockopt_rounds_total"], task=tid) == report["rounds"]
    assert one(m["blockopt_regroups_total"], task=tid) == sum(r["regrouped"] for r in report["history"]) == 0
    assert one(m["blockopt_a_priori_checks_total"], task=tid, result="failed") == 0
    assert one(m["blockopt_a_priori_checks_total"], task=tid, result="held") == prior["rounds_held"]
    assert (
        one(m["blockopt_a_priori_checks_total"], task=tid, result="precondition_failed")
        == (prior["rounds_precondition_failed"])
    )
    one_step = report["checks"]["one_step"]
    assert one(m["blockopt_forecast_checks_total"], task=tid, result="hit") == one_step["hits"]
    assert one(m["blockopt_accounting_violations_total"], task=tid) == 0
    assert one(m["blockopt_forecast_limit"], task=tid) == pytest.approx(report["forecast"]["limit"], rel=1e-9)
    merges = sum(v for k, v in m["blockopt_merges_total"].items() if ("task", tid) in k)
    assert merges == sum(1 for r in report["history"] if r["merged"])
    assert one(m["blockopt_objective"], task=tid) == pytest.approx(report["objective"]["reference"], rel=1e-9)
    assert 0 <= one(m["blockopt_gap"], task=tid) <= 1e-8 * abs(report["objective"]["reference"])
    assert one(m["blockopt_kappa"], task=tid) > 0
    assert 0 < one(m["blockopt_gamma"], task=tid) < 2
    assert one(m["blockopt_delta"], task=tid) >= 0
    assert one(m["blockopt_leases_active"], task=tid) == 0
    assert one(m["blockopt_leases_granted_total"], task=tid) >= received
    assert one(m["blockopt_interference_edges_total"], task=tid) == sum(
        r["interfering"] for r in report["history"]
    )
    calls = m[
        "blockopt_agent_calls_total"
    ]  # a lease that found nothing was a call too ("nothing found" report)
    assert 1 <= len(calls) <= report["agents"]
    assert sum(calls.values()) == received + report["proposals"]["abandoned"]
    assert all(dict(k)["model"] == "heuristic" for k in calls)
    assert one(m["blockopt_round_duration_seconds_count"], mode="rounds") == report["rounds"]
    assert one(m["blockopt_scoring_duration_seconds_count"], mode="rounds") == report["rounds"]


def test_lagging_proposers_empty_rounds_do_not_stop_the_task_early(
    coordinator: Coordinator, procs: list[Any]
) -> None:
    """Agents that see corrections 3 leases old find nothing for a while after each change (their view
    catches up); the stall rule adds that lag, as the engine-only path does, instead of calling it converged."""
    task = coordinator.create_task(
        params={"blocks": 4, "dim": 3, "coupling": 0.5},
        merge_policy="checked",
        proposer={"name": "heuristic", "knobs": {"staleness": 3}},
        stop={"stall_rounds": 2},
    )
    tid = task["id"]
    procs += [agent_process(coordinator, task, "--name", f"w{i}", "--seed", str(i)) for i in range(4)]
    view = coordinator.wait_for(tid, lambda v: v["status"] != "running", timeout=90)
    assert view["status"] in ("optimal", "stalled"), view
    assert view["relative_gap"] <= 1e-5, (
        view
    )  # measured: 6e-11..6e-8 under load (without the lag: 3e-4..3e-2)


def wait_lease(coord: Coordinator, tid: str) -> None:
    coord.wait_for(tid, lambda v: v["leases"] == 1, timeout=30)


def test_sigkill_mid_lease_loses_nothing(coordinator_factory: Any, procs: list[Any]) -> None:
    coord = coordinator_factory(lease_ttl=1.0, round_deadline=0.3)
    task = coord.create_task(params={"blocks": 4, "dim": 3, "coupling": 0.5})
    tid = task["id"]
    slow = agent_process(coord, task, "--name", "doomed", "--proposer-option", "delay_s=120")
    procs.append(slow)
    wait_lease(coord, tid)  # it holds a block and is 'thinking' (renewing its lease)
    slow.send_signal(signal.SIGKILL)
    slow.wait()
    procs += [agent_process(coord, task, "--name", f"w{i}", "--seed", str(i)) for i in range(2)]
    view = coord.wait_for(tid, lambda v: v["status"] != "running", timeout=90)
    assert view["status"] == "optimal" and view["relative_gap"] <= 1e-10
    assert finish(procs[1:]) == [0, 0]
    m = metrics(coord.admin)
    assert one(m["blockopt_leases_expired_total"], task=tid) >= 1  # the killed agent's lease lapsed...
    report = coord.admin.get(f"/v1/tasks/{tid}/report").json()
    assert (
        report["proposals"]["received"] == report["proposals"]["accepted"] + report["proposals"]["rejected"]
    )


def test_sigterm_releases_the_lease(coordinator_factory: Any, procs: list[Any]) -> None:
    coord = coordinator_factory(lease_ttl=60.0)
    task = coord.create_task()
    tid = task["id"]
    slow = agent_process(coord, task, "--proposer-option", "delay_s=120")
    procs.append(slow)
    wait_lease(coord, tid)
    slow.send_signal(signal.SIGTERM)
    assert slow.wait(20) == 0
    # released, not expired: with a 60 s TTL only the release explains a free block right away
    assert coord.admin.get(f"/v1/tasks/{tid}").json()["leases"] == 0
    assert one(metrics(coord.admin)["blockopt_leases_expired_total"], task=tid) == 0


SERVE_TOKEN = "file-admin-token-7c1e9a04b2d6"


def start_serve(procs: list[Any], tmp_path: Any) -> tuple[subprocess.Popen[bytes], str, httpx.Client]:
    """`blockopt serve` on a free port, its admin token from a file, once /readyz answers: (process, url,
    admin client)."""
    sock = bind()
    port = sock.getsockname()[1]
    sock.close()
    token_file = tmp_path / "admin"
    token_file.write_text(f"{SERVE_TOKEN}\n")
    serve = blockopt_process(
        "serve",
        "--port",
        str(port),
        "--admin-token-file",
        str(token_file),
        "--round-deadline",
        "0.5",
        "--log-level",
        "warning",
    )
    procs.append(serve)
    url = f"http://127.0.0.1:{port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {SERVE_TOKEN}"}, timeout=30)
    deadline = time.monotonic() + 60
    while True:
        try:
            if admin.get("/readyz").status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert serve.poll() is None and time.monotonic() < deadline, "serve did not come up"
        time.sleep(0.1)
    return serve, url, admin


def test_serve_and_fleet_commands(procs: list[Any], tmp_path: Any) -> None:
    """The 'done when' path: `blockopt serve` + POST /v1/tasks + `blockopt fleet --agents 4` converges."""
    serve, url, admin = start_serve(procs, tmp_path)
    created = admin.post("/v1/tasks", json={"kind": "quadratic", "params": {"blocks": 8, "dim": 2}})
    assert created.status_code == 201, created.text
    task = created.json()
    fleet = blockopt_process(
        "fleet",
        "--coordinator",
        url,
        "--task",
        task["id"],
        "--agents",
        "4",
        "--processes",
        "2",
        "--log-level",
        "warning",
        env={"BLOCKOPT_JOIN_TOKEN": task["join_token"]},
    )
    procs.append(fleet)
    assert fleet.wait(120) == 0
    view = admin.get(f"/v1/tasks/{task['id']}").json()
    assert view["status"] == "optimal" and 1 <= view["agents"] <= 4  # late starters may find it done
    assert f'blockopt_tasks{{status="optimal"}} 1.0' in admin.get("/metrics").text
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(20) == 0
    out = serve.stderr.read().decode() if serve.stderr else ""
    assert SERVE_TOKEN not in out and task["join_token"] not in out
    admin.close()


def test_serve_exits_on_sigterm_while_a_live_page_reads_an_open_task(procs: list[Any], tmp_path: Any) -> None:
    """An open task's event stream never ends by itself (a live page left open): SIGTERM still ends
    `blockopt serve`, exit 0, the stream cut after the shutdown grace."""
    serve, url, admin = start_serve(procs, tmp_path)
    task = admin.post("/v1/tasks", json={"kind": "quadratic", "params": {"blocks": 2, "dim": 2}}).json()
    opened = threading.Event()

    def read_the_stream() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the server going away under it is the point
            with admin.stream("GET", f"/v1/tasks/{task['id']}/events", timeout=60.0) as r:
                opened.set()
                for _ in r.iter_bytes():
                    pass

    reader = threading.Thread(target=read_the_stream, name="live-page")
    reader.start()
    assert opened.wait(30), "the event stream did not open"
    time.sleep(1.0)  # the stream is past its first pass, waiting for a change that will not come
    serve.send_signal(signal.SIGTERM)
    try:
        assert serve.wait(30) == 0
    finally:
        reader.join(30)
        admin.close()


def test_serve_refuses_without_admin_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "BLOCKOPT_ADMIN_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "blockopt", "serve", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "admin token" in done.stderr
