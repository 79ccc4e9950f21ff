"""``blockopt serve`` flags: generated from ServiceSettings, and each one takes effect.

``--rate-per-agent`` and ``--max-body-bytes`` used to be parsed and then dropped;
the flags now come from the settings model, so a setting cannot exist without
its flag, nor a flag without its setting.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from blockopt.cli import build_parser
from blockopt.service_flags import STORE_FIELDS, flag_of, settings_from_args
from coordinator.api.embedded import bind
from coordinator.settings import ServiceSettings, weak_token_reason
from tasks.routing.movingai import DATA
from tests.conftest import ADMIN, REPO, Coordinator, blockopt_process

STRONG = "serve-flags-admin-token-93b1f0c7"
SAMPLES: dict[str, tuple[list[str], Any]] = {
    "redis_prefix": (["x:"], "x:"),
    "retain_finished": (["30"], 30.0),
    "redis_commit": (["watch"], "watch"),
    "redis_pool_size": (["64"], 64),
    "redis_pool_timeout": (["2.5"], 2.5),
    "round_lock_ttl": (["7.5"], 7.5),
    "lease_ttl": (["3"], 3.0),
    "round_deadline": (["0.7"], 0.7),
    "quorum": (["0.5"], 0.5),
    "tick": (["0.2"], 0.2),
    "screen_exact_checks": (["2"], 2),
    "inline_step_ms": (["0"], 0.0),
    "max_body_bytes": (["2048"], 2048),
    "rate_per_agent": (["0.01"], 0.01),
    "rate_burst": (["3"], 3.0),
    "default_max_rounds": (["7"], 7),
    "max_wait": (["1.5"], 1.5),
    "metrics_max_tasks": (["3"], 3),
    "metrics_max_agents": (["4"], 4),
    "retry_after": (["0.9"], 0.9),
    "prepare_wait": (["0"], 0.0),
    "prepare_retry_after": (["2.5"], 2.5),
    "insecure_dev_token": ([], True),
    "public_read": ([], True),
    "data_dirs": (["/srv/a", "--data-dir", "/srv/b"], (Path("/srv/a"), Path("/srv/b"))),
    "kinds": (["quadratic"], ("quadratic",)),
    "api_workers": (["3"], 3),
    "engine_workers": (["2"], 2),
    "notify_poll": (["0.1"], 0.1),
    "engine_metrics_port": (["9200"], 9200),
}
"""A non-default value for every flag-backed setting (secrets are tested through their files below)."""


def parse(*argv: str, environ: dict[str, str] | None = None) -> ServiceSettings:
    args = build_parser().parse_args(["serve", *argv])
    return settings_from_args(args, {}, environ if environ is not None else {"BLOCKOPT_ADMIN_TOKEN": STRONG})


def test_every_setting_has_a_flag_and_a_sample_here() -> None:
    secrets = {n for n, f in ServiceSettings.model_fields.items() if "SecretStr" in str(f.annotation)}
    assert set(SAMPLES) == set(ServiceSettings.model_fields) - STORE_FIELDS - secrets
    assert parse() == ServiceSettings(admin_token=SecretStr(STRONG))  # absent flags: the model's defaults


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_flag_reaches_its_setting(name: str) -> None:
    argv, expected = SAMPLES[name]
    settings = parse(flag_of(name), *argv)
    assert getattr(settings, name) == expected
    assert getattr(settings, name) != ServiceSettings.model_fields[name].default


def test_the_redis_pool_flags_size_the_stores_pool() -> None:
    from coordinator.store import make_store

    store = make_store(ServiceSettings(store="redis", redis_pool_size=7, redis_pool_timeout=2.5))
    pool = store.r.connection_pool  # type: ignore[attr-defined]
    assert (pool.max_connections, pool.timeout) == (7, 2.5)


def test_secret_settings_come_from_files_or_the_environment(tmp_path: Path) -> None:
    admin_file, metrics_file = tmp_path / "admin", tmp_path / "metrics"
    admin_file.write_text(STRONG + "\n")
    metrics_file.write_text("metrics-secret\n")
    s = parse("--admin-token-file", str(admin_file), "--metrics-token-file", str(metrics_file), environ={})
    assert s.admin_token is not None and s.admin_token.get_secret_value() == STRONG
    assert s.metrics_token is not None and s.metrics_token.get_secret_value() == "metrics-secret"
    s = parse(environ={"BLOCKOPT_ADMIN_TOKEN": STRONG, "BLOCKOPT_METRICS_TOKEN": "m"})
    assert s.metrics_token is not None and s.metrics_token.get_secret_value() == "m"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--metrics-token", "on-the-command-line"])  # never a flag


def test_bad_flag_values_name_the_flag() -> None:
    with pytest.raises(ValueError, match="--quorum"):
        parse("--quorum", "2")
    with pytest.raises(ValueError, match="--lease-ttl"):
        parse("--lease-ttl", "0")


@pytest.mark.parametrize(
    "token",
    [
        "short-token-1234",
        "REPLACE-ME-with-openssl-rand-hex-24",
        "changeme-changeme-changeme-123",
        "my-s3cret-admin-token-for-prod-9",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ],
)
def test_weak_admin_tokens_are_refused(token: str) -> None:
    assert weak_token_reason(token) is not None
    with pytest.raises(ValueError, match="insecure-dev-token"):
        parse(environ={"BLOCKOPT_ADMIN_TOKEN": token})
    assert parse("--insecure-dev-token", environ={"BLOCKOPT_ADMIN_TOKEN": token}).insecure_dev_token


def test_a_generated_token_is_accepted() -> None:
    import secrets

    assert weak_token_reason(secrets.token_hex(24)) is None
    assert weak_token_reason(ADMIN) is None


def test_serve_refuses_a_placeholder_token_with_one_line() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "BLOCKOPT_ADMIN_TOKEN": "REPLACE-ME-with-openssl-rand-hex-24",
    }
    done = subprocess.run(
        [sys.executable, "-m", "blockopt", "serve", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "placeholder" in done.stderr and "REPLACE-ME" not in done.stderr


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, httpx.Client, subprocess.Popen[bytes]]]:
    """A real `blockopt serve` with a non-default value for the flags whose effect is checked here."""
    sock = bind()
    port = sock.getsockname()[1]
    sock.close()
    metrics = tmp_path / "metrics"
    metrics.write_text("serve-flags-metrics-token\n")
    proc = blockopt_process(
        "serve",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--rate-per-agent",
        "0.01",
        "--rate-burst",
        "2",
        "--max-body-bytes",
        "2000",
        "--lease-ttl",
        "3",
        "--default-max-rounds",
        "7",
        "--kind",
        "quadratic",
        "--metrics-token-file",
        str(metrics),
        "--max-wait",
        "0.5",
        "--public-read",
        env={"BLOCKOPT_ADMIN_TOKEN": STRONG},
    )
    url = f"http://127.0.0.1:{port}"
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {STRONG}"}, timeout=30)
    deadline = time.monotonic() + 60
    while True:
        try:
            if admin.get("/readyz").status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
        time.sleep(0.1)
    yield url, admin, proc
    admin.close()
    proc.kill()
    proc.wait()


def test_serve_flags_take_effect(served: tuple[str, httpx.Client, subprocess.Popen[bytes]]) -> None:
    url, admin, proc = served
    # --max-body-bytes: a 3,000-byte body is refused before it is read
    big = admin.post(
        "/v1/tasks", json={"kind": "quadratic", "params": {}, "proposer": {"knobs": {"x": "y" * 3000}}}
    )
    assert big.status_code == 413 and big.json()["error"]["code"] == "payload_too_large"
    # --kind: only the served kinds
    other = admin.post("/v1/tasks", json={"kind": "routing", "params": {}})
    assert other.status_code == 400 and "serves only quadratic" in other.json()["error"]["message"]
    task = admin.post("/v1/tasks", json={"kind": "quadratic", "params": {"blocks": 2, "dim": 2}}).json()
    # --default-max-rounds
    assert admin.get(f"/v1/tasks/{task['id']}").json()["budgets"]["rounds"] == 7
    # --public-read: no token needed to read
    assert httpx.get(f"{url}/v1/tasks/{task['id']}").status_code == 200
    # --lease-ttl
    joined = httpx.post(
        f"{url}/v1/tasks/{task['id']}/agents",
        json={"name": "f"},
        headers={"Authorization": f"Bearer {task['join_token']}"},
    ).json()
    assert joined["lease_ttl"] == 3.0
    agent = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {joined['token']}"}, timeout=30)
    grant = agent.post(f"/v1/tasks/{task['id']}/leases").json()
    assert grant["ttl"] == 3.0
    # --rate-per-agent / --rate-burst: a burst of 2, then one request per 100 s
    agent.post(f"/v1/tasks/{task['id']}/leases/{grant['lease_id']}/renew")
    limited = agent.post(f"/v1/tasks/{task['id']}/leases/{grant['lease_id']}/renew")
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "rate_limited"
    agent.close()
    # --metrics-token-file
    assert httpx.get(f"{url}/metrics").status_code == 401
    assert (
        httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer serve-flags-metrics-token"}).status_code
        == 200
    )


def test_data_dirs_confine_params_paths(
    coordinator_factory: Callable[..., Coordinator], tmp_path: Path
) -> None:
    allowed = tmp_path / "maps"
    allowed.mkdir()
    shutil.copy(DATA / "maps" / "empty-8-8.map", allowed / "mine.map")
    outside = tmp_path / "elsewhere.map"
    shutil.copy(DATA / "maps" / "empty-8-8.map", outside)
    (allowed / "escape.map").symlink_to(outside)
    coord = coordinator_factory(data_dirs=(allowed,))
    small = {"robots": 2, "scen": "empty-8-8-random-1", "exact_limit": 0}

    def create(map_value: str) -> httpx.Response:
        return coord.admin.post("/v1/tasks", json={"kind": "routing", "params": {"map": map_value, **small}})

    for bad in (
        str(outside),
        str(allowed / ".." / "elsewhere.map"),
        str(allowed / "escape.map"),
        "/etc/passwd",
    ):
        r = create(bad)
        assert r.status_code == 400, (bad, r.text)
        err = r.json()["error"]
        assert err["field"] == "params.map" and "outside the coordinator's data directories" in err["message"]
        assert "--data-dir" in err["message"]
    assert create("empty-8-8").status_code == 201  # a bundled name is not a path
    ok = create(str(allowed / "mine.map"))
    assert ok.status_code == 201, ok.text


def test_no_data_dirs_means_no_paths(coordinator: Coordinator, tmp_path: Path) -> None:
    path = tmp_path / "q"
    path.mkdir()
    r = coordinator.admin.post("/v1/tasks", json={"kind": "sqlplan", "params": {"queries": str(path)}})
    assert r.status_code == 400 and "none configured" in r.json()["error"]["message"]


def test_blockopt_run_accepts_a_path_named_on_its_own_command_line(tmp_path: Path) -> None:
    shutil.copy(DATA / "maps" / "empty-8-8.map", tmp_path / "mine.map")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "blockopt",
            "run",
            "routing",
            "--map",
            str(tmp_path / "mine.map"),
            "--scen",
            "empty-8-8-random-1",
            "--robots",
            "2",
            "--agents",
            "1",
            "--processes",
            "1",
            "--exact-limit",
            "0",
            "--max-rounds",
            "5",
            "--quiet",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "mine" in done.stdout
