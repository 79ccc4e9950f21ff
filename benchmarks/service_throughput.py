"""Coordinator submit throughput and latency vs a trivial FastAPI POST endpoint (not a test).

64 simulated agents (the quadratic heuristic, no think time) run the real
protocol against ONE coordinator process (`blockopt serve`): lease → submit
(``?wait=0``) → long-poll the verdict when it is 202 → lease again (or, in the
``/next`` cases, submit with ``?wait=5&next_lease=true`` and take the next lease
from the verdict: one request per proposal). A proposal counts once its verdict
is known inside the measured window, and the server's CPU is read at the
window's end: the last round waits out its deadline for agents that stopped,
and dividing by the drained wall time cost the coordinator up to 11% of its
rate in the runs where that tail lasted 1 s. The same load generator POSTs a proposal-shaped body to a trivial
FastAPI endpoint (benchmarks/lib/trivial_app.py, also one uvicorn process).

Load generator: ``--gen-procs`` processes × threads, each agent a stdlib
``http.client`` keep-alive connection (lowest per-request client overhead
available here; no aiohttp). CPU seconds of server and generator are read from
/proc so one can check the generator is not the bottleneck; when ``wrk`` is
installed the trivial endpoint is also measured with it (C load generator) as
a ceiling.

    .venv/bin/python -m benchmarks.service_throughput [--agents 64] [--seconds 15]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.lib.cli import Parser

ROOT = Path(__file__).resolve().parent.parent
ADMIN = "bench-admin-token-4f0b9d2e7a61"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_ready(port: int, path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            if conn.getresponse().status < 500:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server on {port} did not come up")


class Conn:
    """One keep-alive connection with JSON helpers."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(method, path, body=data, headers=self.headers)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)


def agent_loop(
    port: int,
    task: dict[str, str],
    deadline: float,
    out: dict[str, Any],
    wait: float = 0.0,
    chain: bool = False,
) -> None:
    """One simulated agent. ``chain``: ask for the next lease with the verdict (``?next_lease=true``, as
    `blockopt agent` does), so a steady loop is one request per proposal."""
    from tasks.quadratic import QuadraticProposer

    proposer = QuadraticProposer()
    tid = task["id"]
    status, joined = Conn(port, task["join_token"]).call("POST", f"/v1/tasks/{tid}/agents", {"name": "bench"})
    assert status == 201, joined
    c = Conn(port, joined["token"])
    submit_lat: list[float] = []
    requests = proposals = late = 0
    query = f"wait={wait}" + ("&next_lease=true" if chain else "")
    grant: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        if grant is None:
            status, grant = c.call("POST", f"/v1/tasks/{tid}/leases")
            requests += 1
            if (status == 429 and grant["error"]["code"] == "no_block_available") or status == 503:
                if status == 503:  # the store is unreachable for now: retried, as `blockopt agent` does
                    out["unavailable"] = out.get("unavailable", 0) + 1
                time.sleep(grant["error"].get("retry_after", 0.05))
                grant = None
                continue
            if status != 201:  # the task ended (or refused this agent): say why in the result
                out["stopped"] = f"{status} {grant.get('error', {}).get('code', '')}".strip()
                break
        draft = proposer.propose(grant["contract"])
        assert draft is not None
        body = {
            "lease_id": grant["lease_id"],
            "block": draft.block,
            "base_version": grant["version"],
            "value": draft.value,
            "predicted_improvement": draft.predicted_improvement,
            "usage": {"calls": 1, "model": "heuristic"},
        }
        grant = None
        t0 = time.perf_counter()
        status, view = c.call("POST", f"/v1/tasks/{tid}/proposals?{query}", body)
        submit_lat.append(time.perf_counter() - t0)
        requests += 1
        if status not in (200, 202):
            continue
        while status == 202 and time.monotonic() < deadline:
            status, view = c.call(
                "GET",
                f"/v1/tasks/{tid}/proposals/{view['id']}?wait=2" + ("&next_lease=true" if chain else ""),
            )
            requests += 1
        if status == 200:  # complete: leased, submitted, verdict known
            if time.monotonic() <= deadline:
                proposals += 1
            else:  # answered after the window (the last round waits out its deadline): not counted
                late += 1
            grant = view.get("next_lease")
    out.update(submit=submit_lat, requests=requests, proposals=proposals, late=late)


PROPOSAL_BODY = {
    "lease_id": "x" * 32,
    "block": 3,
    "base_version": 12,
    "value": [0.1, -0.2, 0.3, 0.4],
    "predicted_improvement": 0.01,
    "usage": {"calls": 1, "model": "heuristic"},
}
"""A proposal-shaped body for the endpoints that only parse it (the trivial and the floor endpoints)."""


def trivial_loop(port: int, deadline: float, out: dict[str, Any]) -> None:
    c = Conn(port)
    body = PROPOSAL_BODY
    lat: list[float] = []
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        status, _ = c.call("POST", "/echo", body)
        lat.append(time.perf_counter() - t0)
        assert status == 202
    done = len(lat) - (time.monotonic() > deadline)  # the request answered after the window is not counted
    out.update(submit=lat, requests=done, proposals=done)


def gen_process(
    kind: str,
    port: int,
    task: dict[str, str] | None,
    agents: int,
    start: float,
    seconds: float,
    queue: Any,
    wait: float = 0.0,
    chain: bool = False,
) -> None:
    while time.time() < start:
        time.sleep(0.005)
    deadline = time.monotonic() + seconds
    results: list[dict[str, Any]] = [{} for _ in range(agents)]
    target = (
        (lambda i: agent_loop(port, task, deadline, results[i], wait, chain))
        if kind == "coordinator" and task
        else (lambda i: trivial_loop(port, deadline, results[i]))
    )
    threads = [threading.Thread(target=target, args=(i,)) for i in range(agents)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ru = os.times()
    queue.put(
        {
            "submit": [x for r in results for x in r.get("submit", [])],
            "requests": sum(r.get("requests", 0) for r in results),
            "proposals": sum(r.get("proposals", 0) for r in results),
            "late": sum(r.get("late", 0) for r in results),
            "cpu": ru.user + ru.system,
        }
    )


def py_spy() -> str:
    return shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))


def profile_dir(ap: argparse.ArgumentParser, out: str) -> str:
    """``--profile``'s directory, or a one-line usage error (exit 2) when py-spy is not installed."""
    if not Path(py_spy()).exists():
        ap.error(f"--profile needs py-spy, not found at {py_spy()} (pip install -e '.[bench]')")
    return out


def profiler(pid: int, seconds: float, out: str | None) -> subprocess.Popen[bytes] | None:
    """py-spy attached to a server for the measured seconds (``--profile DIR``); None when not asked."""
    if not out:
        return None
    return subprocess.Popen(
        [
            py_spy(),
            "record",
            "-p",
            str(pid),
            "-d",
            str(int(seconds)),
            "-r",
            "250",
            "-f",
            "raw",
            "--gil",
            "-o",
            out,
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def load(
    kind: str,
    port: int,
    task: dict[str, str] | None,
    agents: int,
    procs: int,
    seconds: float,
    server_pid: int,
    wait: float = 0.0,
    profile: str | None = None,
    chain: bool = False,
) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start = time.time() + 2.0
    per = [agents // procs + (1 if i < agents % procs else 0) for i in range(procs)]
    children = [
        ctx.Process(target=gen_process, args=(kind, port, task, n, start, seconds, queue, wait, chain))
        for n in per
    ]
    for ch in children:
        ch.start()
    while time.time() < start:
        time.sleep(0.005)
    cpu0 = cpu_seconds(server_pid)
    spy = profiler(server_pid, seconds, profile)
    t0 = time.monotonic()
    time.sleep(max(0.0, t0 + seconds - time.monotonic()))
    cpu1 = cpu_seconds(server_pid)  # the window's CPU: the work counted is the work done inside it
    parts = [queue.get(timeout=seconds + 120) for _ in children]
    wall = time.monotonic() - t0
    for ch in children:
        ch.join()
    if spy is not None:
        spy.wait()
    lat = sorted(x for p in parts for x in p["submit"])
    proposals = sum(p["proposals"] for p in parts)
    requests = sum(p["requests"] for p in parts)
    return {
        "proposals_per_s": proposals / seconds,
        "requests_per_s": requests / seconds,
        "p50_ms": 1000 * lat[len(lat) // 2] if lat else float("nan"),
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan"),
        "server_cpu_s": cpu1 - cpu0,
        "gen_cpu_s": sum(p["cpu"] for p in parts),
        "wall_s": wall,
        "server_us_per_request": 1e6 * (cpu1 - cpu0) / max(1, requests),
        "proposals": proposals,
        "late": sum(p.get("late", 0) for p in parts),
        "requests": requests,
    }


def start(
    cmd: list[str], port: int, ready: str, env: dict[str, str] | None = None, root: Path = ROOT
) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        cmd,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_ready(port, ready)
    return proc


def start_trivial(port: int, *extra: str) -> subprocess.Popen[bytes]:
    """The baseline: a FastAPI endpoint that does nothing, under uvicorn like the coordinator."""
    cmd = [sys.executable, "-m", "uvicorn", "benchmarks.lib.trivial_app:app", "--port", str(port)]
    return start([*cmd, "--log-level", "warning", "--no-access-log", *extra], port, "/docs")


def start_serve(
    port: int, *extra: str, round_deadline: float | None = 1.0, root: Path = ROOT
) -> subprocess.Popen[bytes]:
    """A real `blockopt serve` for load: per-agent rate limit out of the way, ready when /readyz answers."""
    cmd = [sys.executable, "-m", "blockopt", "serve", "--port", str(port), "--log-level", "warning"]
    cmd += ["--rate-per-agent", "100000"]
    if round_deadline is not None:
        cmd += ["--round-deadline", str(round_deadline)]
    return start([*cmd, *extra], port, "/readyz", env={"BLOCKOPT_ADMIN_TOKEN": ADMIN}, root=root)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wrk_trivial(port: int, connections: int, seconds: float) -> str | None:
    if shutil.which("wrk") is None:
        return None
    body = json.dumps(
        {
            "lease_id": "x" * 32,
            "block": 3,
            "base_version": 12,
            "value": [0.1, -0.2, 0.3, 0.4],
            "predicted_improvement": 0.01,
            "usage": {"calls": 1, "model": "heuristic"},
        }
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(
            f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
            'wrk.headers["Content-Type"] = "application/json"\n'
        )
    done = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{connections}",
            f"-d{int(seconds)}s",
            "--latency",
            "-s",
            f.name,
            f"http://127.0.0.1:{port}/echo",
        ],
        capture_output=True,
        text=True,
    )
    os.unlink(f.name)
    lines = [
        ln.strip()
        for ln in done.stdout.splitlines()
        if "Requests/sec" in ln or ln.strip().startswith(("50%", "99%"))
    ]
    return "; ".join(lines)


def create_task(port: int, mode: str, policy: str, blocks: int) -> dict[str, str]:
    status, created = Conn(port, ADMIN).call(
        "POST",
        "/v1/tasks",
        {
            "kind": "quadratic",
            "params": {"blocks": blocks, "dim": 4, "coupling": 0.3},
            "merge_policy": policy,
            "mode": mode,
            "budgets": {"rounds": 1_000_000},
            # keep the task running for the whole measurement (it would otherwise converge and stop)
            "stop": {"relative_gap": 0.0, "stall_rounds": 1_000_000},
        },
    )
    assert status == 201, created
    return created


def run_case(
    case: str, args: argparse.Namespace, profile: str | None = None, root: Path | None = None
) -> dict[str, Any]:
    """One coordinator case (MODE/POLICY[/wait|/next]) against a fresh `blockopt serve` of ``root`` (default:
    ``--tree``, else this tree)."""
    mode, policy, *rest = case.split("/")
    port = free_port()
    serve = start_serve(
        port, *shlex.split(args.serve_args), root=root or (args.tree.resolve() if args.tree else ROOT)
    )
    try:
        task = create_task(port, mode, policy, args.blocks)
        wait = 5.0 if rest in (["wait"], ["next"]) else 0.0
        row = load(
            "coordinator",
            port,
            task,
            args.agents,
            args.gen_procs,
            args.seconds,
            serve.pid,
            wait,
            profile=profile,
            chain=rest == ["next"],
        )
        view = Conn(port, ADMIN).call("GET", f"/v1/tasks/{task['id']}")[1]
        row["rounds"], row["rel_gap"] = view["round"], view["relative_gap"]
        return row
    finally:
        stop(serve)


def run_trivial(args: argparse.Namespace, profile: str | None = None) -> dict[str, Any]:
    port = free_port()
    trivial = start_trivial(port)
    try:
        return load(
            "trivial", port, None, args.agents, args.gen_procs, args.seconds, trivial.pid, profile=profile
        )
    finally:
        stop(trivial)


def paired(args: argparse.Namespace) -> None:
    """``--pairs N``: per case, N (trivial, coordinator) pairs back to back, order alternated; the ratio
    proposals/s ÷ trivial requests/s within each pair, and the median."""
    load0 = os.getloadavg()
    print(
        f"{args.agents} agents, quadratic n={args.blocks} d=4 coupling=0.3, {args.seconds:.0f} s per run, "
        f"{args.pairs} pairs per case; coordinator from {args.tree or ROOT}; load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}",
        flush=True,
    )
    out: dict[str, Any] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "load_start": load0,
        "cases": {},
    }
    for case in args.cases.split(","):
        pairs = []
        for k in range(args.pairs):
            tag = f"{case.replace('/', '-')}-{k + 1}"

            def prof(name: str, tag: str = tag) -> str | None:
                return str(Path(args.profile) / f"{name}-{tag}.txt") if args.profile else None

            if k % 2 == 0:
                trivial, coord = run_trivial(args, prof("trivial")), run_case(case, args, prof("coordinator"))
            else:
                coord = run_case(case, args, prof("coordinator"))
                trivial = run_trivial(args, prof("trivial"))
            ratio = coord["proposals_per_s"] / trivial["requests_per_s"]
            pairs.append({"trivial": trivial, "coordinator": coord, "ratio": ratio, "load": os.getloadavg()})
            print(
                f"{case} pair {k + 1} ({'trivial first' if k % 2 == 0 else 'coordinator first'}): trivial "
                f"{trivial['requests_per_s']:.1f} req/s ({trivial['server_us_per_request']:.0f} us CPU/req), "
                f"coordinator {coord['proposals_per_s']:.1f} proposals/s "
                f"({1e6 * coord['server_cpu_s'] / max(1, coord['proposals']):.0f} us CPU/proposal, "
                f"{coord['rounds']} rounds); ratio {ratio:.2f}; load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        ratios = [p["ratio"] for p in pairs]
        out["cases"][case] = {"pairs": pairs, "median_ratio": statistics.median(ratios)}
        print(
            f"{case}: proposals/s / trivial requests/s, median {statistics.median(ratios):.2f} "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f}, n={len(ratios)})",
            flush=True,
        )
    load1 = os.getloadavg()
    out["load_end"] = load1
    print(f"load average at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


def main() -> None:
    ap = Parser(prog="service_throughput", description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--gen-procs", type=int, default=2)
    ap.add_argument(
        "--cases",
        default="rounds/independent,rounds/independent/wait,rounds/independent/next,"
        "rounds/checked/next,async/independent/next",
        help="MODE/POLICY[/wait|/next]: plain = lease, submit ?wait=0, poll (3 requests); /wait submits "
        "with ?wait=5 (verdict inline, 2 requests); /next also takes the next lease with the "
        "verdict (?next_lease=true, 1 request; what `blockopt agent` does)",
    )
    ap.add_argument(
        "--profile", metavar="DIR", help="record a py-spy profile (raw folded stacks) of each server"
    )
    ap.add_argument(
        "--before",
        type=Path,
        metavar="DIR",
        help="another checkout (e.g. `git archive` of main): each coordinator case also runs against its "
        "`blockopt serve`, right before this tree's, and the ratios after/before are printed",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="with --before: run each case this many times per tree, alternating which tree goes first "
        "(before/after, then after/before, ...), and print the median ratio: one pair of runs of the same "
        "tree can differ by 15-30%% on this machine, and the first run of a pair had an edge",
    )
    ap.add_argument(
        "--pairs",
        type=int,
        default=0,
        metavar="N",
        help="instead: N pairs per case, each the trivial endpoint and the coordinator back to back (order "
        "alternated), the ratio taken within each pair; prints every pair and the median (on a shared "
        "machine the trivial endpoint's rate moves with the load, so a ratio needs its own trivial run)",
    )
    ap.add_argument(
        "--tree",
        type=Path,
        metavar="DIR",
        help="with --pairs: serve the coordinator from this checkout (e.g. `git archive` of main)",
    )
    ap.add_argument(
        "--serve-args",
        default="",
        metavar="ARGS",
        help="more `blockopt serve` options for the coordinator side, e.g. '--quorum 0.75'",
    )
    ap.add_argument("--json", type=Path, metavar="PATH", help="write the rows and ratios here")
    args = ap.parse_args()
    if args.profile:
        Path(profile_dir(ap, args.profile)).mkdir(parents=True, exist_ok=True)
    if args.pairs:
        paired(args)
        return

    def prof(name: str) -> str | None:
        return str(Path(args.profile) / f"{name.replace('/', '-')}.txt") if args.profile else None

    print(
        f"{args.agents} agents, quadratic n={args.blocks} d=4 coupling=0.3, {args.seconds:.0f} s per case, "
        f"generator: {args.gen_procs} processes x threads of http.client keep-alive; {os.cpu_count()} cores"
    )
    port = free_port()
    trivial = start_trivial(port)
    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        rows.append(
            (
                "trivial POST",
                load(
                    "trivial",
                    port,
                    None,
                    args.agents,
                    args.gen_procs,
                    args.seconds,
                    trivial.pid,
                    profile=prof("trivial"),
                ),
            )
        )
        wrk = wrk_trivial(port, args.agents, args.seconds)
    finally:
        stop(trivial)
    trees = [("before", args.before.resolve()), ("after", ROOT)] if args.before else [("", ROOT)]
    runs = [
        (c, t, k)
        for c in args.cases.split(",")
        for k in range(args.repeats if args.before else 1)
        for t in (trees if k % 2 == 0 else trees[::-1])
    ]
    for case, (tree, root), k in runs:
        row = run_case(case, args, prof(f"{case}-{tree}-{k + 1}" if tree else case), root)
        rep = f" #{k + 1}" if args.repeats > 1 and tree else ""
        rows.append((f"coordinator {case}" + (f" [{tree}{rep}]" if tree else ""), row))
    head = (
        f"{'endpoint':34s} {'proposals/s':>11s} {'requests/s':>10s} {'submit p50 ms':>13s} {'p99 ms':>8s} "
        f"{'server cpu us/req':>17s} {'server cpu':>10s} {'gen cpu':>8s} {'rounds':>6s} {'rel gap':>9s}"
    )
    print(head)
    for name, r in rows:
        print(
            f"{name:34s} {r['proposals_per_s']:11.1f} {r['requests_per_s']:10.1f} {r['p50_ms']:13.2f} "
            f"{r['p99_ms']:8.2f} {r['server_us_per_request']:17.0f} {r['server_cpu_s']:9.1f}s "
            f"{r['gen_cpu_s']:7.1f}s {r.get('rounds', '-')!s:>6s} "
            f"{(format(r['rel_gap'], '.2e') if 'rel_gap' in r else '-'):>9s}"
        )
    base = rows[0][1]
    for name, r in rows[1:]:
        print(
            f"{name}: proposals/s / trivial requests/s = {r['proposals_per_s'] / base['requests_per_s']:.2f}; "
            f"requests/s / trivial requests/s = {r['requests_per_s'] / base['requests_per_s']:.2f}; "
            f"server CPU per request = {r['server_us_per_request'] / base['server_us_per_request']:.2f}x trivial"
        )
    ratios: dict[str, float] = {}
    per_run: dict[str, list[float]] = {}
    table = dict(rows)
    for name, r in rows:
        if " [after" in name:
            case, _, tag = name.partition(" [after")
            before = table[f"{case} [before{tag}"]
            per_run.setdefault(case, []).append(r["proposals_per_s"] / before["proposals_per_s"])
    for case, values in per_run.items():
        ratios[case] = statistics.median(values)
        each = ", ".join(f"{v:.2f}" for v in values)
        print(
            f"{case}: proposals/s after / before = {ratios[case]:.2f}"
            + (f" (median of {each})" if len(values) > 1 else "")
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "rows": dict(rows),
                    "after_over_before": ratios,
                    "after_over_before_per_repeat": per_run,
                },
                indent=1,
            )
        )
    if wrk:
        print(f"wrk -t2 -c{args.agents} on the trivial endpoint (C generator, ceiling): {wrk}")


if __name__ == "__main__":
    main()
