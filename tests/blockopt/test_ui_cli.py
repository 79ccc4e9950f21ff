"""`blockopt run ... --ui`: the page's URL at start, still served after the run, until Ctrl-C."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import threading
import time

import httpx

from tests.conftest import blockopt_process


def lines_of(proc: subprocess.Popen[bytes]) -> queue.Queue[str]:
    q: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            q.put(raw.decode(errors="replace"))

    threading.Thread(target=pump, daemon=True).start()
    return q


def wait_line(q: queue.Queue[str], pattern: str, timeout: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            line = q.get(timeout=0.5)
        except queue.Empty:
            continue
        seen.append(line)
        if m := re.search(pattern, line):
            return m
    raise AssertionError(f"no line matching {pattern!r} in {timeout:.0f}s; saw {seen[-10:]}")


def test_run_with_ui_prints_the_url_and_serves_after_the_end() -> None:
    proc = blockopt_process(
        "run",
        "quadratic",
        "--blocks",
        "4",
        "--dim",
        "2",
        "--agents",
        "2",
        "--processes",
        "1",
        "--ui",
        env={"BLOCKOPT_ADMIN_TOKEN": ""},
    )
    try:
        q = lines_of(proc)
        m = wait_line(
            q, r"live view: (http://127\.0\.0\.1:\d+)/ui/#/tasks/(t-\w+)\s+\(paste the token (\S+) ", 60
        )
        base, task_id, token = m.groups()
        assert httpx.get(f"{base}/ui/").status_code == 200
        wait_line(q, r"still serving .*Ctrl-C", 120)
        assert httpx.get(f"{base}/v1/tasks/{task_id}").status_code == 401  # reads are private
        bearer = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{base}/v1/tasks/{task_id}", headers=bearer).json()["status"] != "running"
        agents = httpx.get(f"{base}/v1/tasks/{task_id}/agents", headers=bearer)
        assert agents.status_code == 200 and len(agents.json()["agents"]) == 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_ui_with_inproc_is_a_usage_error() -> None:
    proc = blockopt_process("run", "quadratic", "--inproc", "--ui")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert (
        err.decode().strip().splitlines()[-1]
        == "blockopt: error: --ui needs the service path (drop --inproc)"
    )
