"""Deep fuzzing: schemathesis against a live ``blockopt serve``, through the OpenAPI document's own links.

The ``st`` CLI runs every phase (examples, coverage, fuzzing, stateful) with a
fixed seed; ``tests/fuzz_hooks.py`` gives each request the credential an agent
would hold (join token from task creation, agent token from join), and
``tests/schemathesis.toml`` makes stateful testing follow only the declared
links (create → join → lease → submit → poll, ...). The HAR of every request
is then counted: each seed's run must have made at least ``MIN_CASES`` cases and no 5xx, the
runs together at least one 2xx on every route of the document, and all of schemathesis' own
checks (status codes, content types, headers, response schemas, Allow on 405,
rejection of schema-violating input, acceptance of schema-valid input, auth)
must pass. Failures it once found
live on as plain tests in ``tests/coordinator/api/test_fuzz_regressions.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from coordinator.api.embedded import bind
from tests.conftest import REPO, blockopt_process

pytestmark = pytest.mark.slow

SEEDS = (1, 2)
"""Two runs, because the stateful phase's length is a lottery against a live server: Hypothesis ends it at
the first scenario whose answers differ from an earlier one with the same prefix (``FlakyStrategyDefinition``:
a bundle left empty because a task's budget ran out or a lease expired a moment sooner), and schemathesis
counts that as a clean finish. On this machine (2026-12-06, seed 1, 13 runs, some beside a busy core) 5 ended
so after 12-26 scenarios with 788-942 cases in all; the others ran 70-79 scenarios, 1,589-1,991 cases."""
EXAMPLES = 30
"""Cases per operation in the fuzzing phase (stateful scenarios: tests/schemathesis.toml). The coverage phase is left out: it doubled the run time (~140 s more on this
machine under load) for boundary cases that the fuzzing phase's negative mode also reaches."""
ADMIN = "fuzz-admin-token-6b2e9f41c0d3a8"
CHECKS = "all"
"""Every check schemathesis has, positive_data_acceptance included: a body the document allows is accepted
(it found an empty ``selection.generators`` refused with 400, crossed sizes with 422, ``3.0`` refused as an
integer; issue 33), one it forbids is refused."""
MIN_CASES = 700
"""Per run: the examples and fuzzing phases alone make about 770 cases; a run below this lost part of them
(hooks that stopped authenticating end most cases in one 401 and a short run)."""
ST = Path(sys.executable).parent / "st"


def routes_of(spec: dict[str, Any]) -> list[tuple[str, str]]:
    return [(method.upper(), path) for path, item in spec["paths"].items() for method in item]


def summarize(har: dict[str, Any], routes: list[tuple[str, str]], seed: int = SEEDS[0]) -> dict[str, Any]:
    """Cases, 5xx count and the routes that answered at least one 2xx, from the run's HAR."""
    patterns = [(m, p, re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", p) + "$")) for m, p in routes]
    statuses: Counter[tuple[str, str, int]] = Counter()
    server_errors = []
    entries = har["log"]["entries"]
    for entry in entries:
        method, path = entry["request"]["method"], urlparse(entry["request"]["url"]).path
        status = int(entry["response"]["status"])
        if status >= 500:
            server_errors.append(f"{method} {path} -> {status}")
        for m, p, rx in patterns:
            if m == method and rx.match(path):
                statuses[(m, p, status // 100)] += 1
                break
    with_2xx = sorted(f"{m} {p}" for m, p in routes if statuses[(m, p, 2)])
    return {
        "seed": seed,
        "cases": len(entries),
        "server_errors": len(server_errors),
        "server_error_examples": server_errors[:5],
        "routes": len(routes),
        "routes_with_2xx": len(with_2xx),
        "routes_without_2xx": sorted(f"{m} {p}" for m, p in routes if not statuses[(m, p, 2)]),
    }


@pytest.fixture
def served() -> Any:
    sock = bind()
    port = sock.getsockname()[1]
    sock.close()
    proc = blockopt_process(
        "serve",
        "--port",
        str(port),
        "--kind",
        "quadratic",
        "--rate-per-agent",
        "10000",
        "--rate-burst",
        "10000",
        "--max-wait",
        "0.2",
        "--log-level",
        "warning",
        env={"BLOCKOPT_ADMIN_TOKEN": ADMIN},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
        time.sleep(0.1)
    yield url, proc
    proc.kill()
    proc.wait()


def fuzz(
    url: str, seed: int, spec: dict[str, Any], tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """One ``st run`` with ``seed`` against the served coordinator: the process and the summary of its HAR."""
    har_path = tmp_path / f"fuzz-{seed}.har"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SCHEMATHESIS_HOOKS": "tests.fuzz_hooks",
        "BLOCKOPT_FUZZ_ADMIN_TOKEN": ADMIN,
        "BLOCKOPT_FUZZ_URL": url,
    }
    started = time.monotonic()
    done = subprocess.run(
        [
            str(ST),
            "--config-file",
            str(REPO / "tests" / "schemathesis.toml"),
            "run",
            f"{url}/openapi.json",
            "--seed",
            str(seed),
            "--max-examples",
            str(EXAMPLES),
            "--workers",
            "1",
            "--request-timeout",
            "10",
            "--phases",
            "examples,fuzzing,stateful",
            "--checks",
            CHECKS,
            "--report",
            "har",
            "--report-har-path",
            str(har_path),
            "--no-color",
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = summarize(json.loads(har_path.read_text()), routes_of(spec), seed)
    summary["wall_s"] = round(time.monotonic() - started, 1)
    (REPO / "out").mkdir(exist_ok=True)
    (REPO / "out" / f"fuzz-{seed}.har").write_text(har_path.read_text())
    return done, summary


def test_schemathesis_finds_nothing(
    served: tuple[str, subprocess.Popen[bytes]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, proc = served
    spec = httpx.get(f"{url}/openapi.json").json()
    summaries = []
    for seed in SEEDS:
        done, summary = fuzz(url, seed, spec, tmp_path)
        summaries.append(summary)
        with capsys.disabled():
            print(
                f"\nschemathesis (seed {seed}, {summary['wall_s']:.0f} s): {summary['cases']} cases, "
                f"{summary['server_errors']} 5xx, {summary['routes_with_2xx']}/{summary['routes']} routes with a 2xx"
            )
        assert done.returncode == 0, done.stdout[-6000:]
        assert summary["server_errors"] == 0, summary["server_error_examples"]
        assert summary["cases"] >= MIN_CASES, done.stdout[-3000:]
    (REPO / "out" / "fuzz-summary.json").write_text(json.dumps(summaries, indent=2))
    never_2xx = set.intersection(*(set(s["routes_without_2xx"]) for s in summaries))
    assert never_2xx == set(), f"no 2xx in any run: {sorted(never_2xx)}"
    assert proc.poll() is None, "the coordinator died under fuzzing"


def test_the_summary_counts_what_it_says() -> None:
    """The counting can fail: a 5xx and a route without a 2xx are seen."""
    routes = [("GET", "/v1/tasks/{task_id}"), ("POST", "/v1/tasks")]
    har = {
        "log": {
            "entries": [
                {"request": {"method": "GET", "url": "http://h/v1/tasks/t-1"}, "response": {"status": 200}},
                {"request": {"method": "POST", "url": "http://h/v1/tasks"}, "response": {"status": 500}},
            ]
        }
    }
    s = summarize(har, routes)
    assert s["cases"] == 2 and s["server_errors"] == 1 and s["routes_without_2xx"] == ["POST /v1/tasks"]
