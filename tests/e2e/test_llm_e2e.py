"""Issue 6 done-when: ``blockopt run routing --proposer llm`` against a faulty OpenAI-compatible server.

The same run by hand (two shells):

    .venv/bin/python -m tests.fake_openai --port 8009 --faults mix --seed 1 --task 'routing={"map":"random-32-32-10"}'
    .venv/bin/blockopt run routing --map random-32-32-10 --scen random-32-32-10-random-1 --robots 20 \\
        --agents 3 --proposer llm --llm-base-url http://127.0.0.1:8009/v1 --time-limit 120 --report r.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.registry import create_task
from tests.conftest import REPO
from tests.fake_openai import FakeConfig, ServerThread
from tests.llm_support import fake_llm

pytestmark = pytest.mark.timeout(150)
TIME_LIMIT = 25


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    task = create_task("routing", {"map": "random-32-32-10", "exact_limit": 0})
    with fake_llm({"routing": task}, FakeConfig(faults="mix", seed=1)) as srv:
        yield srv


def test_llm_team_reaches_a_collision_free_plan_through_faults(server: ServerThread, tmp_path: Path) -> None:
    report_path = tmp_path / "r.json"
    argv = [
        sys.executable,
        "-m",
        "blockopt",
        "run",
        "routing",
        "--map",
        "random-32-32-10",
        "--scen",
        "random-32-32-10-random-1",
        "--robots",
        "20",
        "--agents",
        "3",
        "--exact-limit",
        "0",
        "--initial",
        "shortest",  # 8 collisions to resolve: the prioritized start is already collision-free
        "--proposer",
        "llm",
        "--llm-base-url",
        server.base_url,
        "--time-limit",
        str(TIME_LIMIT),
        "--quiet",
        "--report",
        str(report_path),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    env.pop("OPENAI_API_KEY", None)
    env.pop("BLOCKOPT_LLM_API_KEY", None)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIME_LIMIT + 90)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(report_path.read_text())
    served = server.fake.served
    faults = {f: n for f, n in served.items() if f != "none"}
    print(
        f"served {dict(served)}; usage {report['usage']['tokens']} tokens, {report['usage']['calls']} calls; "
        f"proposals {report['proposals']}"
    )
    assert faults and served["none"] > 0  # the mix really injected faults among sound answers
    assert report["objective"]["initial"] > 8 * 10_000  # the first plan collides (W per conflict) ...
    assert report["feasible"] is True  # ... and the team's plan does not
    assert report["proposals"]["accepted"] >= 1
    # no proven optimum (--exact-limit 0): the run ends at the time limit, or stalls once the agents
    # decline to change a plan they cannot improve; never failed, never still running
    assert report["status"] in {"budget_exhausted", "stalled"}
    usage = report["usage"]
    assert usage["tokens"] > 0 and usage["calls"] > 0
    assert usage["by_model"].keys() == {"openai/gpt-oss-120b"}
    assert usage["tokens_per_solved_task"] == usage["tokens"]
    assert "tokens" in done.stdout and "calls" in done.stdout
