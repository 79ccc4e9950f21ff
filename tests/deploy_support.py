"""Helpers for the deploy checks: the files under deploy/, the tools that check them, PromQL parsing.

Why here and not in conftest: these helpers read repository files and find external tools
(promtool, prometheus, docker-compose); nothing else in the suite needs them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
PROMETHEUS_YML = DEPLOY / "prometheus" / "prometheus.yml"
ALERTS_YML = DEPLOY / "prometheus" / "alerts.yml"
ALERTS_TEST_YML = DEPLOY / "prometheus" / "alerts_test.yml"
DASHBOARD_JSON = DEPLOY / "grafana" / "dashboards" / "blockopt.json"
COMPOSE_YML = REPO / "docker-compose.yml"
DEMO_SCRIPT = DEPLOY / "demo" / "create_task.py"
K8S = DEPLOY / "k8s"
COORDINATOR_JOB = "blockopt-coordinator"
ENGINE_JOB = "blockopt-engine"

APT_HINT = {
    "promtool": "apt-get install prometheus",
    "prometheus": "apt-get install prometheus",
    "docker-compose": "apt-get install docker-compose",
}


def in_ci() -> bool:
    """CI (CI=true, or BLOCKOPT_REQUIRE_DEPLOY_TOOLS=1 as .ci/run sets it): a missing tool is a failure."""
    return (
        os.environ.get("CI", "").lower() in ("1", "true", "yes")
        or os.environ.get("BLOCKOPT_REQUIRE_DEPLOY_TOOLS", "") == "1"
    )


def missing_tool(what: str) -> None:
    """Skip locally with how to get the tool; fail in CI, where .ci/run installs it."""
    msg = f"{what} is not installed ({APT_HINT.get(what, 'see .ci/run')})"
    if in_ci():
        pytest.fail(f"{msg}; CI must provide it (.ci/run installs it)", pytrace=False)
    pytest.skip(msg)


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        missing_tool(name)
    assert path is not None
    return path


def compose_command() -> list[str]:
    """`docker-compose` (Debian, needs no engine) or the `docker compose` plugin, whichever exists."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    missing_tool("docker-compose")
    raise AssertionError("unreachable")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the expressions in the dashboard and the alert rules --------------------------------------------

GRAFANA_SUBSTITUTIONS = {
    "$__rate_interval": "30s",
    "${__rate_interval}": "30s",
    "$task": ".*",
    "${task}": ".*",
}
"""What Grafana would put in place of the dashboard's variables, for querying Prometheus directly."""

_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)")


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD_JSON.read_text())


def dashboard_panels(dash: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dash.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # panels inside collapsed rows


def dashboard_expressions(dash: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) for every target of every panel, variables substituted."""
    found = []
    for panel in dashboard_panels(dash):
        for target in panel.get("targets", []):
            expr = target.get("expr")
            if expr:
                found.append(
                    (f"panel {panel.get('title')!r} target {target.get('refId')}", grafana_to_promql(expr))
                )
    return found


def grafana_to_promql(expr: str) -> str:
    for var, value in GRAFANA_SUBSTITUTIONS.items():
        expr = expr.replace(var, value)
    leftover = _VARIABLE.findall(expr)
    if leftover:
        raise AssertionError(
            f"dashboard variable(s) {leftover} have no test substitution: add them to "
            f"GRAFANA_SUBSTITUTIONS in tests/deploy_support.py ({expr})"
        )
    return expr


def template_queries(dash: dict[str, Any]) -> list[tuple[str, str]]:
    """Template variables' queries as plain PromQL (``label_values(m, l)`` is Grafana's, not PromQL)."""
    out = []
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query)
        m = re.fullmatch(r"\s*label_values\((.+),\s*(\w+)\)\s*", text)
        out.append((f"variable ${var['name']}", m.group(1) if m else text))
    return out


def alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(ALERTS_YML.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


_OPEN, _CLOSE = "({[", ")}]"
_SET_OPS = re.compile(r"(and|or|unless)\b")
_CMP_OPS = ("==", "!=", ">=", "<=", ">", "<")
_MODIFIERS = re.compile(
    r"^\s*(?:bool\s+)?(?:(?:on|ignoring)\s*\([^)]*\)\s*)?(?:(?:group_left|group_right)\s*(?:\([^)]*\))?\s*)?"
)
_NUMBER = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")


def _split_top_level(expr: str) -> list[str]:
    """Split on set operators (and/or/unless) and comparisons outside (), {}, [] and strings."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif depth == 0:
            word = _SET_OPS.match(expr, i)
            if word and (i == 0 or not (expr[i - 1].isalnum() or expr[i - 1] == "_")):
                parts.append(expr[start:i])
                i = start = word.end()
                continue
            op = next((o for o in _CMP_OPS if expr.startswith(o, i)), None)
            if op is not None:
                parts.append(expr[start:i])
                i = start = i + len(op)
                continue
        i += 1
    parts.append(expr[start:])
    return parts


def alert_operands(expr: str) -> list[str]:
    """The vector operands of an alert expression: what must have data even when nothing fires.

    ``A > 0.9 and on (task) B == 1`` gives ``[A, B]``: the thresholds and the set operators are what
    make a healthy system's alert empty, the series underneath must still exist.
    """
    operands = []
    for part in _split_top_level(expr):
        part = part[_MODIFIERS.match(part).end() :].strip()  # type: ignore[union-attr]
        if part and not _NUMBER.match(part):
            operands.append(part)
    return operands


# -- the Kubernetes manifests ------------------------------------------------------------------------


def k8s_documents() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                doc.setdefault("_file", path.name)
                docs.append(doc)
    return docs


def containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []))
