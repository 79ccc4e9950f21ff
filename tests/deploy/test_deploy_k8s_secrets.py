"""The Kubernetes kustomization, rendered, carries no credential.

Rendered with ``kubectl kustomize`` (kustomize built in) when kubectl is on the
path, else by reading the kustomization's resources as kustomize would for
plain manifests (no generators or patches are allowed in it, so nothing else
could add a value).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy_support import K8S

CREDENTIAL = re.compile(
    r"REPLACE|changeme|s3cret|(?:join|agent|read)_[A-Za-z0-9_-]{16,}|\b[0-9a-f]{32,}\b|\b[A-Za-z0-9+/]{40,}={0,2}",
    re.I,
)
"""Placeholder-looking values, blockopt's own token formats, and long hex or base64 strings."""


def render_with_kubectl(directory: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def render_by_parsing(directory: Path) -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unsupported = set(kustomization) - {
        "apiVersion",
        "kind",
        "namespace",
        "resources",
        "labels",
        "commonLabels",
    }
    assert not unsupported, f"the parser renders plain resources only; found {unsupported}"
    docs = []
    for resource in kustomization["resources"]:
        docs += [d for d in yaml.safe_load_all((directory / resource).read_text()) if d]
    return docs


def render(directory: Path) -> list[dict[str, Any]]:
    return render_with_kubectl(directory) if shutil.which("kubectl") else render_by_parsing(directory)


def credentials_in(docs: list[dict[str, Any]]) -> list[str]:
    """Secrets with values, and credential-looking strings anywhere in the render."""
    found = [
        f"Secret {d['metadata']['name']} with values"
        for d in docs
        if d.get("kind") == "Secret" and (d.get("data") or d.get("stringData"))
    ]
    for d in docs:
        found += [m.group(0) for m in CREDENTIAL.finditer(yaml.safe_dump(d))]
    return found


def test_rendered_kustomization_carries_no_credential() -> None:
    docs = render(K8S)
    assert {d["kind"] for d in docs} >= {"Deployment", "Service", "ConfigMap"}
    assert credentials_in(docs) == []


@pytest.mark.parametrize("renderer", [render_by_parsing, render_with_kubectl])
def test_a_committed_secret_would_be_found(tmp_path: Path, renderer: Any) -> None:
    if renderer is render_with_kubectl and not shutil.which("kubectl"):
        pytest.skip("kubectl is not installed; the parsing renderer covers this")
    shutil.copytree(K8S, tmp_path / "k8s")
    (tmp_path / "k8s" / "tokens.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: blockopt-tokens}\n"
        'stringData: {admin-token: "REPLACE-ME-with-openssl-rand-hex-24"}\n'
    )
    kustomization = tmp_path / "k8s" / "kustomization.yaml"
    kustomization.write_text(
        kustomization.read_text().replace("resources:\n", "resources:\n  - tokens.yaml\n")
    )
    found = credentials_in(renderer(tmp_path / "k8s"))
    assert "Secret blockopt-tokens with values" in found and any("REPLACE" in f for f in found)
