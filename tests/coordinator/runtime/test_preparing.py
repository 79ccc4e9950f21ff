"""A kind's slow preparation (its reference, its first plan) never stalls the service.

While a task's kind sleeps or spins in CP-SAT to compute its reference, ``/healthz`` and another task's
leases keep answering within 100 ms at the 99th percentile (before, ``POST /v1/tasks`` ran the reference on
the event loop and every request waited for it), the create request answers at once with ``preparing``,
joins and leases of the preparing task are told to retry, and the task runs once prepared, or ends
``failed`` with the reason. A behaviour bound, not a benchmark: the latencies are measured here because the
bound is what a load balancer's health check relies on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import slow_kinds
from tests.conftest import Coordinator

P99_BOUND_S = 0.100
"""The issue's bound. On a machine busy with other work the same probes measured with nothing preparing
set a floor: the bound is then 3x that idle p99 (side by side in one test), never below 100 ms. A stalled
loop answers after the whole preparation (seconds), far above either."""


@pytest.fixture
def slow_kinds_installed(tmp_path: Path) -> Iterator[Path]:
    yield from slow_kinds.installed(tmp_path)


@pytest.fixture
def coord(coordinator_factory: Callable[..., Coordinator], slow_kinds_installed: Path) -> Coordinator:
    # the probe leases and releases as fast as it can: the per-agent rate limit is not what is measured
    return coordinator_factory(lease_ttl=5.0, round_deadline=0.5, rate_per_agent=1000.0, rate_burst=1000.0)


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


@dataclass
class Probed:
    health: list[float] = field(default_factory=list)
    leases: list[float] = field(default_factory=list)
    idle_health: list[float] = field(default_factory=list)
    idle_leases: list[float] = field(default_factory=list)
    created: httpx.Response | None = None
    create_seconds: float = 0.0


def probe_while_creating(coord: Coordinator, kind: str, seconds: float) -> Probed:
    """Create a task of ``kind`` whose reference takes ``seconds``, and meanwhile time ``/healthz`` and a
    lease (then its release) on another, quick task, back to back, for the whole preparation."""
    other = coord.create_task(params={"blocks": 4, "dim": 3})
    agent, _ = coord.join(other)
    probe = coord.client()
    out = Probed()

    def probe_once(health: list[float], leases: list[float]) -> None:
        started = time.perf_counter()
        assert probe.get("/healthz").status_code == 200
        health.append(time.perf_counter() - started)
        started = time.perf_counter()
        r = agent.post(f"/v1/tasks/{other['id']}/leases")
        leases.append(time.perf_counter() - started)
        assert r.status_code == 201, r.text
        assert agent.delete(f"/v1/tasks/{other['id']}/leases/{r.json()['lease_id']}").status_code == 204
        time.sleep(0.005)

    until = time.monotonic() + 1.0  # the idle floor: nothing preparing
    while time.monotonic() < until:
        probe_once(out.idle_health, out.idle_leases)

    def create() -> None:
        started = time.perf_counter()
        out.created = coord.admin.post(
            "/v1/tasks", json={"kind": kind, "params": {"blocks": 2, "dim": 2, "prepare_seconds": seconds}}
        )
        out.create_seconds = time.perf_counter() - started

    creating = threading.Thread(target=create)
    creating.start()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        probe_once(out.health, out.leases)
    creating.join()
    print(  # shown with -s: the figures behind the bound
        f"{kind}: {len(out.health)} probes; /healthz p99 {p99(out.health) * 1000:.1f} ms, "
        f"lease p99 {p99(out.leases) * 1000:.1f} ms (idle: {p99(out.idle_health) * 1000:.1f} and "
        f"{p99(out.idle_leases) * 1000:.1f} ms); create answered in {out.create_seconds:.2f} s"
    )
    return out


def bound(idle: list[float]) -> float:
    return max(P99_BOUND_S, 3 * p99(idle))


def assert_the_service_kept_answering(out: Probed) -> None:
    for name, during, idle in (
        ("/healthz", out.health, out.idle_health),
        ("lease", out.leases, out.idle_leases),
    ):
        assert p99(during) < bound(idle), (
            f"{name} p99 {p99(during) * 1000:.0f} ms while preparing (bound {bound(idle) * 1000:.0f} ms)"
        )
    assert len(out.health) >= 20 and len(out.leases) >= 20, "too few probes to say anything"


def assert_it_prepares_then_runs(coord: Coordinator, out: Probed) -> None:
    assert out.created is not None and out.created.status_code == 201, out.created
    created = out.created.json()
    assert created["status"] == "preparing"
    assert out.create_seconds < coord.settings.prepare_wait + 2.0  # answered once prepare_wait was up
    view = coord.wait_for(created["id"], lambda v: v["status"] != "preparing")
    assert view["status"] == "running", view
    assert view["reference_kind"] == "optimum" and view["blocks"] == 2
    agent, _ = coord.join(created)
    assert agent.post(f"/v1/tasks/{created['id']}/leases").status_code == 201


def test_the_latency_check_fails_when_the_loop_stalls() -> None:
    """What the old code gave: one probe answered after the whole preparation, however busy the machine."""
    idle = [0.004] * 50
    stalled = Probed(health=[0.004] * 40 + [5.0], leases=[0.005] * 41, idle_health=idle, idle_leases=idle)
    with pytest.raises(AssertionError, match="/healthz p99"):
        assert_the_service_kept_answering(stalled)
    busy = Probed(health=[0.2] * 41, leases=[0.2] * 41, idle_health=[0.1] * 50, idle_leases=[0.1] * 50)
    assert_the_service_kept_answering(busy)  # 3x a busy machine's idle floor: not a stall


def test_a_reference_sleeping_in_python_stalls_nothing(coord: Coordinator) -> None:
    out = probe_while_creating(coord, "sleepy-quadratic", 5.0)
    assert_the_service_kept_answering(out)
    assert_it_prepares_then_runs(coord, out)


def test_a_reference_spinning_in_cp_sat_stalls_nothing(coord: Coordinator) -> None:
    out = probe_while_creating(coord, "spinning-quadratic", 4.0)
    assert_the_service_kept_answering(out)
    assert_it_prepares_then_runs(coord, out)


@pytest.mark.slow
def test_thirty_seconds_of_preparation_stall_nothing(coord: Coordinator) -> None:
    """The issue's case: a plugin's 30 s reference."""
    out = probe_while_creating(coord, "sleepy-quadratic", 30.0)
    assert_the_service_kept_answering(out)
    assert_it_prepares_then_runs(coord, out)


def test_a_preparing_task_is_shown_and_tells_agents_to_retry(coord: Coordinator) -> None:
    created = coord.create_task(kind="sleepy-quadratic", params={"blocks": 2, "dim": 2, "prepare_seconds": 3})
    assert created["status"] == "preparing"
    view = coord.admin.get(f"/v1/tasks/{created['id']}").json()
    assert view["status"] == "preparing" and view["kind"] == "sleepy-quadratic"
    assert view["objective"] is None and view["reference"] is None and view["blocks"] is None
    listed = {v["id"]: v["status"] for v in coord.admin.get("/v1/tasks").json()["tasks"]}
    assert listed[created["id"]] == "preparing"
    # its read token reads it already; joining (and so leasing) waits
    reader = coord.client(created["read_token"])
    assert reader.get(f"/v1/tasks/{created['id']}").json()["status"] == "preparing"
    r = coord.client(created["join_token"]).post(f"/v1/tasks/{created['id']}/agents", json={"name": "early"})
    assert r.status_code == 429, r.text
    error = r.json()["error"]
    assert error["code"] == "task_preparing" and error["retry_after"] > 0
    assert r.headers["retry-after"]
    r = coord.client("agent-token-of-nobody").post(f"/v1/tasks/{created['id']}/leases")
    assert r.status_code == 429 and r.json()["error"]["code"] == "task_preparing"
    assert coord.wait_for(created["id"], lambda v: v["status"] != "preparing")["status"] == "running"


def test_the_reference_takes_nothing_of_the_time_limit(coord: Coordinator) -> None:
    """A kind's reference is a yardstick for reports and forecasts, not part of the search: the seconds it
    takes are not the team's. The task's clock starts at the request less those seconds, which the report's
    reference provenance records (job-shop ta01's 10 s CP-SAT reference left a 10 s run no answer at all).
    The first plan still counts (``test_the_time_limit_counts_the_first_plan``)."""
    asked = time.time()
    created = coord.create_task(
        kind="sleepy-quadratic",
        params={"blocks": 2, "dim": 2, "prepare_seconds": 3},
        budgets={"seconds": 6},
    )
    assert created["status"] == "preparing"
    view = coord.wait_for(created["id"], lambda v: v["status"] != "preparing")
    assert view["status"] == "running", view
    agent, _ = coord.join(created)
    r = agent.post(f"/v1/tasks/{created['id']}/leases")
    assert r.status_code == 201, r.text
    # before: at most 6 - 3 s were left once the reference was in; a loaded machine may take a second
    # between the task's store and this lease, so the margin is wide
    assert r.json()["contract"]["budget"]["seconds"] > 4.5
    assert view["created_at"] >= asked + 3.0 - 0.05
    objective = coord.admin.get(f"/v1/tasks/{created['id']}/report").json()["objective"]
    assert 3.0 - 0.05 <= objective["reference_provenance"]["seconds"] < 3.0 + 2.0


def test_the_kinds_warm_up_takes_nothing_of_the_time_limit(coord: Coordinator) -> None:
    """Routing's kernels compile in about 5 s on a fresh install: with them counted, a 10 s run on a fresh
    clone merged its first answer at 5.8 s. Like the reference, a warm-up is this process's cost, not the
    search's."""
    asked = time.time()
    created = coord.create_task(
        kind="warming-quadratic",
        params={"blocks": 2, "dim": 2, "prepare_seconds": 3},
        budgets={"seconds": 6},
    )
    view = coord.wait_for(created["id"], lambda v: v["status"] != "preparing")
    assert view["status"] == "running", view
    agent, _ = coord.join(created)
    r = agent.post(f"/v1/tasks/{created['id']}/leases")
    assert r.status_code == 201, r.text
    assert r.json()["contract"]["budget"]["seconds"] > 4.5  # (at most 6 - 3 s with the warm-up counted)
    assert view["created_at"] >= asked + 3.0 - 0.05


def test_a_preparation_that_raises_leaves_the_task_failed_with_why(coord: Coordinator) -> None:
    created = coord.create_task(
        kind="failing-quadratic", params={"blocks": 2, "dim": 2, "prepare_seconds": 1.5}
    )
    assert created["status"] == "preparing"
    view = coord.wait_for(created["id"], lambda v: v["status"] != "preparing")
    assert view["status"] == "failed"
    assert "the reference solver crashed" in view["reason"]
    assert view["finished_at"] is not None
    r = coord.client(created["join_token"]).post(f"/v1/tasks/{created['id']}/agents", json={"name": "late"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "task_finished"


def test_a_kind_that_fails_at_once_answers_failed_and_says_why(coord: Coordinator) -> None:
    created = coord.create_task(kind="failing-quadratic", params={"blocks": 2, "prepare_seconds": 0})
    assert created["status"] == "failed"
    view = coord.admin.get(f"/v1/tasks/{created['id']}").json()
    assert view["status"] == "failed" and "the reference solver crashed" in view["reason"]


def test_parameters_the_kind_refuses_are_a_400_and_leave_nothing(coord: Coordinator) -> None:
    r = coord.admin.post("/v1/tasks", json={"kind": "sleepy-quadratic", "params": {"blocks": 0}})
    assert r.status_code == 400 and r.json()["error"]["field"] == "params.blocks", r.text
    assert coord.admin.get("/v1/tasks").json()["tasks"] == []


def test_agents_wait_out_the_preparation_then_work(coord: Coordinator) -> None:
    """The worker (what ``blockopt agent``/``fleet`` run) joins a preparing task by waiting, then leases."""
    from agents.worker import Worker, WorkerConfig

    created = coord.create_task(kind="sleepy-quadratic", params={"blocks": 2, "dim": 2, "prepare_seconds": 2})
    assert created["status"] == "preparing"
    stop = threading.Event()
    worker = Worker(WorkerConfig(coord.url, created["id"], created["join_token"], name="patient"), stop)
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.update(stats=worker.run()))
    thread.start()
    try:
        coord.wait_for(created["id"], lambda v: v["round"] >= 1, timeout=60)
    finally:
        stop.set()
        thread.join(30)
    stats = result["stats"]
    assert stats.leases >= 1 and stats.proposals >= 1
    assert stats.waits >= 1  # it was told to wait at least once


def test_blockopt_run_waits_out_the_preparation(slow_kinds_installed: Path, tmp_path: Path) -> None:
    """``blockopt run`` (embedded coordinator, worker processes) on a kind whose reference takes 2 s."""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    report = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(slow_kinds_installed), str(REPO)])}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "blockopt",
            "run",
            "sleepy-quadratic",
            "--blocks",
            "2",
            "--dim",
            "2",
            "--prepare-seconds",
            "2",
            "--agents",
            "2",
            "--processes",
            "1",
            "--max-rounds",
            "50",
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "preparing" in done.stderr
    assert json.loads(report.read_text())["status"] == "optimal"


def test_a_failed_preparation_is_forgotten_after_retain_finished(
    coordinator_factory: Callable[..., Coordinator], slow_kinds_installed: Path
) -> None:
    coord = coordinator_factory(retain_finished=0.5)
    created = coord.create_task(kind="failing-quadratic", params={"blocks": 2, "prepare_seconds": 0})
    assert coord.admin.get(f"/v1/tasks/{created['id']}").json()["status"] == "failed"
    deadline = time.monotonic() + 20
    while coord.admin.get(f"/v1/tasks/{created['id']}").status_code != 404:
        assert time.monotonic() < deadline, "the failed preparation was never forgotten"
        time.sleep(0.1)


def test_with_several_api_processes_the_answer_waits_for_the_store(
    slow_kinds_installed: Path, tmp_path: Path
) -> None:
    """A preparing task lives in the memory of the process preparing it: where API processes share the
    port, ``POST /v1/tasks`` answers once the task is stored, so any process a later request reaches
    knows it."""
    import os
    import subprocess
    import sys

    from tests.conftest import ADMIN, REPO
    from tests.redis_support import free_port, terminate, wait_until

    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(slow_kinds_installed), str(REPO)]),
        "BLOCKOPT_ADMIN_TOKEN": ADMIN,
    }
    argv = [sys.executable, "-m", "blockopt", "serve", "--port", str(port), "--api-workers", "2"]
    argv += ["--engine-workers", "1", "--store", f"sqlite:///{tmp_path / 'state.db'}"]
    with (tmp_path / "serve.log").open("ab") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
        try:
            return httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(ready, 90, "the coordinator's /readyz")
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60) as c:
            started = time.monotonic()
            r = c.post(
                "/v1/tasks",
                json={"kind": "sleepy-quadratic", "params": {"blocks": 2, "dim": 2, "prepare_seconds": 2}},
            )
            assert r.status_code == 201, r.text
            assert r.json()["status"] == "running" and time.monotonic() - started >= 2.0
            for _ in range(10):  # new connections: they spread over both API processes
                with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}) as fresh:
                    assert fresh.get(f"/v1/tasks/{r.json()['id']}").json()["status"] == "running"
    finally:
        terminate(proc)
