"""A real Prometheus scrapes a real coordinator; every dashboard and alert expression must return data.

Why: a PromQL typo, a renamed metric or a missing label makes a Grafana panel silently empty or an
alert silently dead; only a real query against real scraped data catches it. The expressions are
read from the dashboard JSON and the alert rules, so a new panel or rule is covered without editing
this test. Alert expressions are empty when all is well (that is their point), so for them the full
expression must evaluate without error and each vector operand under the thresholds and set
operators must have data (see ``alert_operands``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml

from tests.deploy_support import (
    ALERTS_YML,
    COORDINATOR_JOB,
    DEMO_SCRIPT,
    ENGINE_JOB,
    PROMETHEUS_YML,
    REPO,
    alert_operands,
    alert_rules,
    dashboard,
    dashboard_expressions,
    free_port,
    need_tool,
    template_queries,
)

ADMIN = "deploy-test-admin-token-5f1d0c"
T = TypeVar("T")
pytestmark = pytest.mark.slow


def poll(what: str, probe: Callable[[], T | None], timeout: float, procs: list[subprocess.Popen[bytes]]) -> T:
    """Call ``probe`` until it returns a value; fail with ``what`` on timeout or if a process died."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except httpx.HTTPError:
            value = None
        if value is not None:
            return value
        for p in procs:
            if p.poll() is not None:
                raise AssertionError(f"{what}: {' '.join(map(str, p.args))} exited with {p.returncode}")  # type: ignore[arg-type]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


@dataclass
class Stack:
    coordinator: str
    prometheus: str
    http: httpx.Client
    procs: list[subprocess.Popen[bytes]]

    def query(self, expr: str) -> dict[str, Any]:
        r = self.http.get(f"{self.prometheus}/api/v1/query", params={"query": expr})
        body = r.json()
        assert r.status_code == 200 and body.get("status") == "success", f"{expr}: {body}"
        return body["data"]


def start(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # a file, not a pipe: nobody reads a pipe here and a full one blocks
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)


def prometheus_config(coordinator_port: int, engine_port: int, rules: Path) -> dict[str, Any]:
    """The repository's prometheus.yml with the API and engine jobs aimed at the test's ports, 1 s cadence."""
    cfg = yaml.safe_load(PROMETHEUS_YML.read_text())
    cfg["global"].update(scrape_interval="1s", evaluation_interval="1s", scrape_timeout="1s")
    cfg["rule_files"] = [str(rules)]
    jobs = []
    for name, port in ((COORDINATOR_JOB, coordinator_port), (ENGINE_JOB, engine_port)):
        job = next(j for j in cfg["scrape_configs"] if j["job_name"] == name)
        job["static_configs"] = [{"targets": [f"127.0.0.1:{port}"]}]
        jobs.append(job)
    cfg["scrape_configs"] = jobs
    return cfg


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    prometheus = need_tool("prometheus")
    tmp = tmp_path_factory.mktemp("prom")
    procs: list[subprocess.Popen[bytes]] = []
    http = httpx.Client(timeout=10.0)
    env = {**os.environ, "PYTHONPATH": str(REPO), "BLOCKOPT_ADMIN_TOKEN": ADMIN}
    try:
        port, engine_port = free_port(), free_port()
        url = f"http://127.0.0.1:{port}"
        procs.append(
            start(
                [
                    sys.executable,
                    "-m",
                    "blockopt",
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    # the deployed shape: an API process and an engine process (its own metrics port)
                    "--store",
                    f"sqlite:///{tmp / 'state.db'}",
                    "--api-workers",
                    "1",
                    "--engine-workers",
                    "1",
                    "--engine-metrics-port",
                    str(engine_port),
                    "--round-deadline",
                    "0.5",
                    "--log-level",
                    "warning",
                ],
                tmp / "serve.log",
                env,
            )
        )
        poll(
            "the coordinator's /readyz",
            lambda: http.get(f"{url}/readyz").status_code == 200 or None,
            60,
            procs,
        )
        # solved by a real fleet: rounds, merges, constants, latencies, usage. Created by the compose
        # demo's own one-shot script and joined through --join-token-file, as the compose fleet does.
        demo = tmp / "demo"
        spec = {
            "kind": "quadratic",
            "params": {"blocks": 6, "dim": 3, "coupling": 0.3},
            "merge_policy": "checked",
            "budgets": {"rounds": 500, "seconds": 600},
        }
        made = subprocess.run(
            [sys.executable, str(DEMO_SCRIPT)],
            capture_output=True,
            text=True,
            timeout=60,
            env={
                **env,
                "BLOCKOPT_URL": url,
                "BLOCKOPT_DEMO_DIR": str(demo),
                "BLOCKOPT_DEMO_TASK": json.dumps(spec),
                "BLOCKOPT_WAIT_S": "30",
            },
        )
        assert made.returncode == 0, made.stdout + made.stderr
        solved_id = (demo / "task_id").read_text().strip()
        assert (demo / "join_token").stat().st_mode & 0o077 == 0, "the join token file must be private"
        # left running with no agent: a running task for the "running" side of the alerts
        r = http.post(
            f"{url}/v1/tasks",
            headers={"Authorization": f"Bearer {ADMIN}"},
            json={
                "kind": "quadratic",
                "params": {"blocks": 2, "dim": 2},
                "budgets": {"rounds": 100, "seconds": 3600},
            },
        )
        assert r.status_code == 201, r.text
        procs.append(
            start(
                [
                    sys.executable,
                    "-m",
                    "blockopt",
                    "fleet",
                    "--coordinator",
                    url,
                    "--task",
                    solved_id,
                    "--join-token-file",
                    str(demo / "join_token"),
                    "--agents",
                    "3",
                    "--processes",
                    "1",
                    "--log-level",
                    "warning",
                ],
                tmp / "fleet.log",
                env,
            )
        )
        fleet = procs[-1]
        poll(
            "two merging rounds of the solved task",
            lambda: (
                http.get(f"{url}/v1/tasks/{solved_id}", headers={"Authorization": f"Bearer {ADMIN}"}).json()[
                    "round"
                ]
                >= 2
                or None
            ),
            60,
            procs[:1],
        )

        rules = tmp / "alerts.yml"
        rules.write_text(ALERTS_YML.read_text())
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(prometheus_config(port, engine_port, rules)))
        prom_port = free_port()
        prom = f"http://127.0.0.1:{prom_port}"
        procs.append(
            start(
                [
                    prometheus,
                    f"--config.file={tmp / 'prometheus.yml'}",
                    f"--storage.tsdb.path={tmp / 'data'}",
                    f"--web.listen-address=127.0.0.1:{prom_port}",
                    "--log.level=warn",
                ],
                tmp / "prometheus.log",
            )
        )
        s = Stack(url, prom, http, procs)
        not_fleet = [p for p in procs if p is not fleet]  # the fleet may end: the task converges

        def scraped_twice() -> bool | None:
            """Both jobs, API and engine: a rate() over the engine's histograms needs two of its samples."""
            for job in (COORDINATOR_JOB, ENGINE_JOB):
                result = s.query(f'count_over_time(up{{job="{job}"}}[5m])')["result"]
                if not (result and float(result[0]["value"][1]) >= 2):
                    return None
            return True

        def rules_evaluated() -> bool | None:
            groups = http.get(f"{prom}/api/v1/rules").json()["data"]["groups"]
            rules_ = [r for g in groups for r in g["rules"]]
            return bool(rules_) and all(not r["lastEvaluation"].startswith("0001") for r in rules_) or None

        poll(
            "Prometheus ready", lambda: http.get(f"{prom}/-/ready").status_code == 200 or None, 30, not_fleet
        )
        poll("a second scrape of the API and the engine", scraped_twice, 30, not_fleet)
        poll("an evaluation of every alert rule", rules_evaluated, 30, not_fleet)
        yield s
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        http.close()
        for log in ("serve.log", "fleet.log", "prometheus.log"):
            path = tmp / log
            if path.exists() and path.stat().st_size:
                sys.stderr.write(f"--- {log} (tail) ---\n{path.read_text(errors='replace')[-2000:]}\n")


def test_the_scrape_targets_are_up(stack: Stack) -> None:
    """The API process and the engine process (split mode) are both scraped."""
    for job in (COORDINATOR_JOB, ENGINE_JOB):
        result = stack.query(f'up{{job="{job}"}}')["result"]
        assert result and result[0]["value"][1] == "1", job


def test_round_durations_come_from_the_engine_process(stack: Stack) -> None:
    """Split mode: rounds run in the engine process; its histogram counts them, the API's does not."""
    engine = stack.query(f'sum(blockopt_round_duration_seconds_count{{job="{ENGINE_JOB}"}})')["result"]
    api = stack.query(f'sum(blockopt_round_duration_seconds_count{{job="{COORDINATOR_JOB}"}})')["result"]
    assert engine and float(engine[0]["value"][1]) >= 2
    assert not api or float(api[0]["value"][1]) == 0


def test_every_dashboard_expression_returns_data(stack: Stack) -> None:
    dash = dashboard()
    exprs = dashboard_expressions(dash) + template_queries(dash)
    assert len(exprs) >= 10
    empty = [f"{where}: {expr}" for where, expr in exprs if not stack.query(expr)["result"]]
    assert not empty, "dashboard queries without data:\n" + "\n".join(empty)


def test_every_alert_expression_evaluates_and_its_series_have_data(stack: Stack) -> None:
    empty = []
    for rule in alert_rules():
        stack.query(rule["expr"])  # the whole rule is valid PromQL over these series (empty when healthy)
        for operand in alert_operands(rule["expr"]):
            if not stack.query(operand)["result"]:
                empty.append(f"{rule['alert']}: {operand}")
    assert not empty, "alert rules whose underlying series have no data:\n" + "\n".join(empty)


def test_prometheus_evaluates_every_rule_without_error(stack: Stack) -> None:
    groups = stack.http.get(f"{stack.prometheus}/api/v1/rules").json()["data"]["groups"]
    loaded = {r["name"]: r for g in groups for r in g["rules"]}
    assert set(loaded) == {r["alert"] for r in alert_rules()}
    bad = {name: r.get("lastError") for name, r in loaded.items() if r["health"] != "ok"}
    assert not bad, bad


def test_a_healthy_run_raises_no_critical_alert(stack: Stack) -> None:
    """The bound held on the quadratic and the coordinator is up: nothing critical may be pending."""
    alerts = stack.http.get(f"{stack.prometheus}/api/v1/alerts").json()["data"]["alerts"]
    critical = [a["labels"] for a in alerts if a["labels"].get("severity") == "critical"]
    assert not critical, critical
