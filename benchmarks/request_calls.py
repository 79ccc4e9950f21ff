"""Python function calls per agent request through the coordinator's ASGI app: a load-independent cost figure.

Wall-clock and CPU figures on a shared 2-core machine swing by 2x between runs; the number of Python
calls a request makes (cProfile's count, client side included) does not. Each tree (this checkout, and
with ``--before DIR`` another one, e.g. ``git archive`` of main) is measured in its own process on the
same requests: an agent's ``GET /proposals/{id}`` (token check, rate limit, store read) and a reader's
``GET /tasks/{id}`` (read access, views, forecast).

    .venv/bin/python benchmarks/request_calls.py [--before DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import cProfile, json, pstats, sys
from fastapi.testclient import TestClient
from pydantic import SecretStr
try:
    from coordinator.api.main import create_app
except ImportError:  # the flat layout, before issue 11
    from coordinator.app import create_app
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore

n = int(sys.argv[1])
token = "k9Qz3vT8pL2mW7xR4nB6yC1dF5gH0jKe"
settings = ServiceSettings(admin_token=SecretStr(token), rate_per_agent=1e9, rate_burst=1e9)
with TestClient(create_app(settings, MemoryStore())) as c:
    admin = {"Authorization": "Bearer " + token}
    spec = {"kind": "quadratic", "params": {"blocks": 16, "dim": 2}}
    t = c.post("/v1/tasks", json=spec, headers=admin).json()
    join = {"Authorization": "Bearer " + t["join_token"]}
    joined = c.post(f"/v1/tasks/{t['id']}/agents", json={"name": "a"}, headers=join).json()
    agent = {"Authorization": "Bearer " + joined["token"]}
    grant = c.post(f"/v1/tasks/{t['id']}/leases", headers=agent).json()
    body = {"lease_id": grant["lease_id"], "block": grant["block"], "base_version": grant["version"],
            "value": [0.0, 0.0], "predicted_improvement": 0.0}
    pid = c.post(f"/v1/tasks/{t['id']}/proposals?wait=0", json=body, headers=agent).json()["id"]
    out = {}
    for name, url, headers in [
        ("GET proposal (agent)", f"/v1/tasks/{t['id']}/proposals/{pid}", agent),
        ("GET task (reader)", f"/v1/tasks/{t['id']}", admin),
    ]:
        for _ in range(20):
            assert c.get(url, headers=headers).status_code in (200, 202)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(n):
            c.get(url, headers=headers)
        prof.disable()
        out[name] = pstats.Stats(prof).total_calls / n
print(json.dumps(out))
"""


def measure(root: Path, n: int) -> dict[str, float]:
    """Calls per request of the tree at ``root`` (its own process, its code first on the path)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(n)],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, metavar="DIR", help="another checkout to measure beside this one")
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--json", type=Path, metavar="PATH")
    args = ap.parse_args()
    trees = ([("before", args.before.resolve())] if args.before else []) + [("after", ROOT)]
    rows: dict[str, Any] = {name: measure(root, args.requests) for name, root in trees}
    for name, row in rows.items():
        print(f"{name:7s} " + "; ".join(f"{k}: {v:.0f} calls" for k, v in row.items()))
    if args.before:
        ratios = {k: rows["after"][k] / rows["before"][k] for k in rows["after"]}
        print("after / before: " + "; ".join(f"{k}: {v:.3f}" for k, v in ratios.items()))
        rows["after_over_before"] = ratios
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, **rows}, indent=1)
        )


if __name__ == "__main__":
    main()
