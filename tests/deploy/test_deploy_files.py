"""Checks that the files under deploy/ and docker-compose.yml are valid for the tools that run them.

Why: a dashboard, an alert or a manifest that is never loaded rots silently. Each file is checked by
the tool that consumes it where that tool runs here (promtool, docker-compose without an engine),
and the commands they start are parsed by blockopt's own command-line parser, so a renamed flag
breaks a test instead of a deployment. Tools that are missing skip locally and fail in CI.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from typing import Any

import pytest
import yaml

from blockopt.cli import build_parser
from tests.deploy_support import (
    ALERTS_TEST_YML,
    ALERTS_YML,
    COMPOSE_YML,
    COORDINATOR_JOB,
    DASHBOARD_JSON,
    DEMO_SCRIPT,
    DEPLOY,
    K8S,
    PROMETHEUS_YML,
    REPO,
    alert_operands,
    alert_rules,
    compose_command,
    containers,
    dashboard,
    dashboard_expressions,
    dashboard_panels,
    k8s_documents,
    need_tool,
)


def parses_as_blockopt(argv: list[str]) -> str | None:
    """None when ``blockopt ARGV`` is accepted by the real parser, else its error line."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            build_parser().parse_args(argv)
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "rejected"
    return None


# -- Prometheus ----------------------------------------------------------------------------------------


def test_promtool_check_config() -> None:
    promtool = need_tool("promtool")
    out = subprocess.run([promtool, "check", "config", str(PROMETHEUS_YML)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 rule files found" in out.stdout + out.stderr  # alerts.yml is really loaded by the config


def test_promtool_check_rules() -> None:
    promtool = need_tool("promtool")
    out = subprocess.run([promtool, "check", "rules", str(ALERTS_YML)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_promtool_alert_unit_tests() -> None:
    """Each alert fires on a sick task and stays silent on a healthy one (deploy/prometheus/alerts_test.yml)."""
    promtool = need_tool("promtool")
    out = subprocess.run([promtool, "test", "rules", str(ALERTS_TEST_YML)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    tested = {
        t["alertname"]
        for case in yaml.safe_load(ALERTS_TEST_YML.read_text())["tests"]
        for t in case.get("alert_rule_test", [])
    }
    assert tested == {r["alert"] for r in alert_rules()}, "every alert needs a unit test in alerts_test.yml"


def test_alert_rules_cover_the_required_conditions() -> None:
    names = {r["alert"] for r in alert_rules()}
    assert {
        "BlockoptRoundStalled",
        "BlockoptBelowForecast",
        "BlockoptAccountingViolation",
        "BlockoptBudgetNearlySpent",
        "BlockoptLeaseExpiryRateHigh",
    } <= names
    assert "BlockoptBoundViolated" not in names  # the per-round inequality is accounting, not evidence
    for rule in alert_rules():
        assert rule["labels"].get("severity") in ("warning", "critical"), rule["alert"]
        assert rule["annotations"].get("summary"), rule["alert"]
        assert alert_operands(rule["expr"]), rule["alert"]


def test_prometheus_scrapes_each_replica_directly() -> None:
    """Per-process histograms must come from each replica, not from whichever one the LB picked."""
    cfg = yaml.safe_load(PROMETHEUS_YML.read_text())
    job = next(j for j in cfg["scrape_configs"] if j["job_name"] == COORDINATOR_JOB)
    targets = [t for sc in job["static_configs"] for t in sc["targets"]]
    compose = yaml.safe_load(COMPOSE_YML.read_text())["services"]
    assert sorted(targets) == sorted(f"{name}:8000" for name in compose if name.startswith("api-"))
    engines = next(j for j in cfg["scrape_configs"] if j["job_name"] == "blockopt-engine")
    targets = [t for sc in engines["static_configs"] for t in sc["targets"]]
    assert sorted(targets) == sorted(f"{name}:9100" for name in compose if name.startswith("engine-"))


# -- Grafana -------------------------------------------------------------------------------------------

REQUIRED_PANELS = {
    "gap": r"blockopt_gap",
    "objective": r"blockopt_objective",
    "kappa": r"blockopt_kappa",
    "gamma": r"blockopt_gamma",
    "delta": r"blockopt_delta",
    "verdicts": r"blockopt_proposals_rejected_total",
    "merges": r"blockopt_merges_total",
    "round latency": r"histogram_quantile\(.*blockopt_round_duration_seconds_bucket",
    "tokens by model": r"sum by \(model\).*blockopt_agent_tokens_total",
}


def test_dashboard_has_the_required_panels() -> None:
    exprs = " \n".join(e for _, e in dashboard_expressions(dashboard()))
    for what, pattern in REQUIRED_PANELS.items():
        assert re.search(pattern, exprs), f"no dashboard panel shows {what}"
    log_panels = [
        p["title"]
        for p in dashboard_panels(dashboard())
        if p.get("fieldConfig", {})
        .get("defaults", {})
        .get("custom", {})
        .get("scaleDistribution", {})
        .get("type")
        == "log"
    ]
    assert any("Gap" in t for t in log_panels), "the gap panel must use a log axis"


def test_dashboard_is_wired_to_the_provisioned_datasource() -> None:
    datasources = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    uids = {d["uid"] for d in datasources["datasources"]}
    dash = dashboard()
    assert dash["uid"] and dash["title"]
    ids = [p["id"] for p in dashboard_panels(dash)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in dashboard_panels(dash):
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] in uids, panel["title"]
        assert panel.get("targets"), f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            assert target["datasource"]["uid"] in uids, panel["title"]
    providers = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/blockopt.yml").read_text())
    path = providers["providers"][0]["options"]["path"]
    compose = yaml.safe_load(COMPOSE_YML.read_text())["services"]["grafana"]
    assert f"./deploy/grafana/dashboards:{path}:ro" in compose["volumes"]
    assert DASHBOARD_JSON.parent.name == "dashboards"


# -- docker-compose ------------------------------------------------------------------------------------

COMPOSE_ENV = {"BLOCKOPT_ADMIN_TOKEN": "compose-config-check-not-a-real-token"}


def compose_config(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("BLOCKOPT_", "COMPOSE_"))}
    full_env.update(env if env is not None else COMPOSE_ENV)
    return subprocess.run(
        [*compose_command(), "-f", str(COMPOSE_YML), *args, "config"],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=REPO,
    )


@pytest.fixture(scope="module")
def compose_services() -> dict[str, Any]:
    out = compose_config("--profile", "llm")
    assert out.returncode == 0, out.stderr
    return yaml.safe_load(out.stdout)["services"]


def test_compose_config_is_valid() -> None:
    out = compose_config()
    assert out.returncode == 0, out.stderr
    services = yaml.safe_load(out.stdout)["services"]
    core = {
        "redis",
        "api-1",
        "api-2",
        "engine-1",
        "engine-2",
        "lb",
        "demo-task",
        "fleet",
        "prometheus",
        "grafana",
    }
    assert core <= set(services)
    # `config` lists every service whatever the profile: check the profiles themselves
    assert all(not services[name].get("profiles") for name in core), "the core services run without a profile"
    llm = {name for name, svc in services.items() if "llm" in (svc.get("profiles") or [])}
    assert {"vllm", "fleet-llm"} <= llm, "the LLM services belong to the llm profile only"


def test_compose_refuses_to_start_without_an_admin_token() -> None:
    out = compose_config(env={})
    assert out.returncode != 0
    assert "BLOCKOPT_ADMIN_TOKEN" in out.stderr


def test_compose_llm_profile(compose_services: dict[str, Any]) -> None:
    vllm = compose_services["vllm"]
    assert "openai/gpt-oss-120b" in vllm["command"]
    devices = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert any("gpu" in d["capabilities"] for d in devices)
    fleet = compose_services["fleet-llm"]
    assert fleet["command"][fleet["command"].index("--proposer") + 1] == "llm"
    assert "base_url=http://vllm:8000/v1" in fleet["command"]


def _blockopt_argv(service: dict[str, Any]) -> list[str] | None:
    """The blockopt argv a compose service runs, or None when it does not run blockopt."""
    entry = service.get("entrypoint")
    command = [str(c) for c in service.get("command") or []]
    if entry is None:
        return command
    script = " ".join(entry).replace("$$", "$")
    if "exec blockopt fleet --task" in script:  # the sh wrapper that reads the task id from the volume
        return ["fleet", "--task", "t-from-volume", *command]
    return None


def test_compose_commands_parse_with_the_real_cli(compose_services: dict[str, Any]) -> None:
    checked = []
    for name, service in compose_services.items():
        if service.get("image") != "blockopt:latest":
            continue
        argv = _blockopt_argv(service)
        if argv is None:
            continue
        error = parses_as_blockopt(argv)
        assert error is None, f"compose service {name}: `blockopt {' '.join(argv)}` is refused: {error}"
        checked.append(name)
    assert {"api-1", "api-2", "engine-1", "engine-2", "fleet", "fleet-llm"} <= set(checked)


def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_compose_api_and_engine_share_redis_and_are_probed(compose_services: dict[str, Any]) -> None:
    """The split: API replicas run no rounds (--engine-workers 0), engine services serve no API."""
    for name in ("api-1", "api-2", "engine-1", "engine-2"):
        argv = compose_services[name]["command"]
        assert _flag(argv, "--store").startswith("redis://redis:6379")
    for name in ("api-1", "api-2"):
        argv = compose_services[name]["command"]
        assert (_flag(argv, "--api-workers"), _flag(argv, "--engine-workers")) == ("1", "0")
        assert any("/readyz" in part for part in compose_services[name]["healthcheck"]["test"])
    for name in ("engine-1", "engine-2"):
        argv = compose_services[name]["command"]
        assert (_flag(argv, "--api-workers"), _flag(argv, "--engine-workers")) == ("0", "1")
        port = _flag(argv, "--engine-metrics-port")
        assert any(f":{port}/metrics" in part for part in compose_services[name]["healthcheck"]["test"])
    nginx = (DEPLOY / "nginx/nginx.conf").read_text()
    assert "server api-1:8000" in nginx and "server api-2:8000" in nginx
    assert "engine" not in nginx  # engines serve no API


def test_compose_demo_task_script_exists_in_the_image() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "COPY deploy/demo/create_task.py /opt/blockopt/create_task.py" in dockerfile
    compose = yaml.safe_load(COMPOSE_YML.read_text())["services"]
    assert compose["demo-task"]["entrypoint"][-1] == "/opt/blockopt/create_task.py"
    # a fresh named volume takes the owner of the image's directory: the non-root user must own it
    for name, svc in compose.items():
        for volume in svc.get("volumes", []):
            target = volume.split(":")[1]
            if svc.get("image") == "blockopt:latest":
                assert target in dockerfile, (
                    f"{name}: {target} is not created (and chowned) in the Dockerfile"
                )


# -- Dockerfile ----------------------------------------------------------------------------------------


def test_dockerfile_is_slim_non_root_and_token_free() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
    assert froms and all(f.startswith("python:3.11-slim") for f in froms)
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert re.search(r'^ENTRYPOINT \["blockopt"\]', text, re.M)
    assert not re.search(r"^(ENV|ARG)\s+.*(TOKEN|API_KEY|PASSWORD)", text, re.M | re.I), (
        "no secrets in the image"
    )
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "tests"} <= set(ignored)


# -- Kubernetes ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def k8s() -> list[dict[str, Any]]:
    return k8s_documents()


def _by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def test_k8s_manifests_are_complete(k8s: list[dict[str, Any]]) -> None:
    deployments = _by_kind(k8s, "Deployment")
    assert {"blockopt-api", "blockopt-engine", "blockopt-agents", "blockopt-redis"} <= set(deployments)
    assert {"blockopt-api", "blockopt-redis"} <= set(_by_kind(k8s, "Service"))
    assert _by_kind(k8s, "ConfigMap") and not _by_kind(k8s, "Secret")  # tokens: `kubectl create secret`
    hpa = _by_kind(k8s, "HorizontalPodAutoscaler")["blockopt-agents"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"]["name"] == "blockopt-agents"
    assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {d["_file"] for d in k8s if d["kind"] != "Kustomization"}
    assert files == set(kustomization["resources"]), "kustomization.yaml must list every manifest"


def test_k8s_api_probes(k8s: list[dict[str, Any]]) -> None:
    dep = _by_kind(k8s, "Deployment")["blockopt-api"]
    assert dep["spec"]["replicas"] >= 2
    (c,) = containers(dep)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["port"] in ports
    port = ports[c["readinessProbe"]["httpGet"]["port"]]
    assert c["args"][c["args"].index("--port") + 1] == str(port)
    assert (_flag(c["args"], "--api-workers"), _flag(c["args"], "--engine-workers")) == ("1", "0")
    svc = _by_kind(k8s, "Service")["blockopt-api"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items())
    assert svc["spec"]["ports"][0]["targetPort"] in ports
    config = {k: v for cm in _by_kind(k8s, "ConfigMap").values() for k, v in cm["data"].items()}
    assert config["BLOCKOPT_COORDINATOR_URL"] == f"http://{svc['metadata']['name']}"


def test_k8s_engine_runs_rounds_only_and_is_probed_on_its_metrics(k8s: list[dict[str, Any]]) -> None:
    dep = _by_kind(k8s, "Deployment")["blockopt-engine"]
    assert dep["spec"]["replicas"] >= 2  # a dead pod's tasks pass to the other through the round lock
    (c,) = containers(dep)
    assert (_flag(c["args"], "--api-workers"), _flag(c["args"], "--engine-workers")) == ("0", "1")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert str(ports["metrics"]) == _flag(c["args"], "--engine-metrics-port")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"] == {"path": "/metrics", "port": "metrics"}
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(ports["metrics"])
    assert "blockopt-engine" not in _by_kind(k8s, "Service")  # nothing calls an engine


def test_k8s_every_container_has_resources(k8s: list[dict[str, Any]]) -> None:
    for dep in _by_kind(k8s, "Deployment").values():
        for c in containers(dep):
            for part in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c.get("resources", {}).get(part, {})), (
                    f"{dep['metadata']['name']}/{c['name']} lacks resources.{part}"
                )


def documented_secret_keys() -> dict[str, set[str]]:
    """The Secret the kustomization's comment tells the user to create, and its keys."""
    text = (K8S / "kustomization.yaml").read_text()
    name = re.search(r"create secret generic (\S+)", text)
    assert name is not None, "kustomization.yaml must document `kubectl create secret generic ...`"
    return {name.group(1): set(re.findall(r"--from-literal=([\w-]+)=", text))}


def test_k8s_tokens_come_from_the_secret(k8s: list[dict[str, Any]]) -> None:
    secrets = documented_secret_keys()
    configmaps = set(_by_kind(k8s, "ConfigMap"))
    refs = []
    for dep in _by_kind(k8s, "Deployment").values():
        for c in containers(dep):
            for env in c.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if re.search(r"TOKEN|API_KEY|PASSWORD", env["name"]):
                    assert ref is not None, f"{env['name']} must come from a secretKeyRef, not a literal"
                if ref:
                    assert ref["key"] in secrets.get(ref["name"], set()), (
                        f"no secret {ref['name']}/{ref['key']}"
                    )
                    refs.append(env["name"])
            for src in c.get("envFrom", []):
                if "configMapRef" in src:
                    assert src["configMapRef"]["name"] in configmaps
    assert {"BLOCKOPT_ADMIN_TOKEN", "BLOCKOPT_JOIN_TOKEN"} <= set(refs)


def test_k8s_commands_parse_with_the_real_cli(k8s: list[dict[str, Any]]) -> None:
    """$(VAR) is expanded from the ConfigMap as Kubernetes does, then blockopt's parser must accept it."""
    config: dict[str, str] = {}
    for cm in _by_kind(k8s, "ConfigMap").values():
        config.update(cm["data"])
    for name in ("blockopt-api", "blockopt-engine", "blockopt-agents"):
        (c,) = containers(_by_kind(k8s, "Deployment")[name])
        values = {**config, **{e["name"]: "from-k8s" for e in c.get("env", [])}}
        argv = [re.sub(r"\$\((\w+)\)", lambda m: values.get(m.group(1), m.group(0)), a) for a in c["args"]]
        assert not any("$(" in a for a in argv), f"{name}: unexpanded variable in {argv}"
        error = parses_as_blockopt(argv)
        assert error is None, f"{name}: `blockopt {' '.join(argv)}` is refused: {error}"


def test_demo_presets_are_valid_task_bodies() -> None:
    """The compose demo's presets pass the API's own request model and their kind's parameter model."""
    import importlib.util

    from coordinator.runtime.wire import CreateTask
    from tasks.registry import kind_class

    spec = importlib.util.spec_from_file_location("create_task", DEMO_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, body in module.PRESETS.items():
        req = CreateTask.model_validate(body)
        kind_class(req.kind).Params.model_validate(req.params)
        assert name in ("quadratic", "routing-llm") or req.kind in name
    compose = yaml.safe_load(COMPOSE_YML.read_text())["services"]
    presets = {
        svc.get("environment", {}).get("BLOCKOPT_DEMO_PRESET", "quadratic")
        for n, svc in compose.items()
        if n.startswith("demo-task")
    }
    assert presets <= set(module.PRESETS)
