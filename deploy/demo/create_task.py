"""Create the compose demo's task through the API and leave its id and join token for the fleet.

Why a script and not a CLI command: creating a task is an admin call over HTTP (the same one any
client makes), and the fleet service must start only once a task exists. This one-shot service
waits for the load balancer's /readyz, POSTs the task (a preset, or BLOCKOPT_DEMO_TASK as JSON) with the admin token from the environment,
and writes ``task_id`` and ``join_token`` (mode 0600) into BLOCKOPT_DEMO_DIR, a volume the fleet
mounts. Standard library only, so it runs in any Python 3.11 image.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # Heuristic agents; a little correction noise gives a visible error floor on the gap panel.
    "quadratic": {
        "kind": "quadratic",
        "params": {"blocks": 32, "dim": 4, "coupling": 0.3, "seed": 7},
        "merge_policy": "checked",
        "budgets": {"rounds": 2000, "seconds": 3600},
        "proposer": {"name": "heuristic", "knobs": {"noise": 0.01}},
    },
    # GPT-OSS-120B agents (profile `llm`): asynchronous merges suit slow, uneven LLM answers.
    "routing-llm": {
        "kind": "routing",
        "params": {"robots": 24, "blocks": 6},
        "merge_policy": "checked",
        "mode": "async",
        "budgets": {"tokens": 2_000_000, "seconds": 3600},
        "proposer": {"name": "llm", "knobs": {}},
    },
}


def request(url: str, body: dict[str, Any] | None = None, token: str | None = None) -> tuple[int, Any]:
    """One JSON request; returns (status, decoded body) for any HTTP status."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def wait_ready(base: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, _ = request(f"{base}/readyz")
            if status == 200:
                return
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            sys.exit(f"create_task: {base}/readyz not ready after {timeout:.0f} s")
        time.sleep(1.0)


def main() -> int:
    base = os.environ.get("BLOCKOPT_URL", "http://lb:8080").rstrip("/")
    token = os.environ.get("BLOCKOPT_ADMIN_TOKEN", "").strip()
    if not token:
        sys.exit("create_task: BLOCKOPT_ADMIN_TOKEN is not set")
    out = Path(os.environ.get("BLOCKOPT_DEMO_DIR", "/var/lib/blockopt/demo"))
    if os.environ.get("BLOCKOPT_DEMO_TASK", "").strip():  # a whole CreateTask body as JSON
        spec = json.loads(os.environ["BLOCKOPT_DEMO_TASK"])
    else:
        preset = os.environ.get("BLOCKOPT_DEMO_PRESET", "quadratic")
        if preset not in PRESETS:
            sys.exit(f"create_task: unknown BLOCKOPT_DEMO_PRESET {preset!r} (known: {', '.join(PRESETS)})")
        spec = PRESETS[preset]
    wait_ready(base, float(os.environ.get("BLOCKOPT_WAIT_S", "120")))
    status, body = request(f"{base}/v1/tasks", spec, token)
    if status != 201:
        sys.exit(f"create_task: POST /v1/tasks answered {status}: {json.dumps(body)}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "task_id").write_text(body["id"] + "\n")
    secret = out / "join_token"
    secret.touch(mode=0o600, exist_ok=True)
    secret.write_text(body["join_token"] + "\n")
    reader = out / "read_token"  # reads of the task are private: this token (or the admin one) reads it
    reader.touch(mode=0o600, exist_ok=True)
    reader.write_text(body["read_token"] + "\n")
    print(f"created task {body['id']} ({spec['kind']}); the fleet joins it", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
