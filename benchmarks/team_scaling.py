"""Does a bigger team reach a plan sooner? Time-to-target speed-up S(N) = T1(Q) / TN(Q), per team size N.

One job over 400 lines: run teams of every size and read one table from the runs (modes, curves, the table,
the command line); the replay itself is ``benchmarks/lib/virtual_team.py``.

Two modes, one table:

- ``real``: the product's own processes, ``blockopt run routing --mode async --agents N --processes N
  --time-limit T --stall-seconds T``; the anytime curve is the objective at every window close, read from the
  task's event stream (each round row's ``closed_at`` minus the task's ``created_at``), or from the report's
  history where its rows carry ``t``. Real mode needs N + 1 free cores: on a shared machine, only N <= 2.
- ``virtual``: the same coordinator code in one process with N virtual agent cores and one coordinator core
  (``benchmarks/lib/virtual_team.py`` states the model and what it leaves out). It books CPU time, not
  wall time, so it tolerates a busy machine (``--jobs 2`` runs two side by side), and predicts what N
  dedicated cores would do. Each run has a process of its own, after one unmeasured warm-up that compiles
  what the first plan needs. Its curve is the head after every accepted answer (virtual seconds).

Q is one agent's objective at ``--target-time`` (per seed; with ``--one-agent-repeats``, the middle of
several one-agent runs of the seed, which differ by tens at 300 robots); TN(Q) the first time N agents'
curve is at or below it. ``--time-of N=SECONDS`` runs a team only as long as its goal needs; ``--stop-at
SEED=OBJECTIVE`` ends a run once its head is there (against a known plan, such as MAPF-LNS2's). The table
shows, per N, the objective at ``--at`` times (one column per seed), TN(Q) and S(N) (``<b``: Q not reached,
S below b), stale and not-improving answers, the coordinator's busy fraction and CPU per commit, the
agents' busy fraction and the share of their CPU in leases that found nothing, then issue 31's goals, each
read from every pairing of runs (``blockopt.samples``), and each N's pace at the ``--at`` times: one agent's
time to the team's head then (``blockopt.pace``), so the table says where along the run the team gains.

    .venv/bin/python -m benchmarks.team_scaling virtual --robots 300 --agents 1 2 4 8 16 --seeds 1 2 \
        --time 120 --time-of 2=60 4=40 8=30 16=20 --at 10 20 30 60 120 --target-time 120 --jobs 2 \
        --out benchmarks/results/team_scaling/virtual-random-k300-q120.json
    .venv/bin/python -m benchmarks.team_scaling real --robots 300 --agents 1 2 --seeds 1 2 --time 30 ...
    .venv/bin/python -m benchmarks.team_scaling table FILE.json ... --at 10 20 30 60 120 --target-time 120 \
        [--one-agent-repeats MORE.json ...] [--pool]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import httpx

from benchmarks.lib.routing import check, make_task
from benchmarks.lib.virtual_team import ReplayConfig, replay
from blockopt.pace import PacedRun, Trace, pace, reading
from blockopt.samples import TimedRun, stratified
from tasks.registry import kind_class

Curve = list[tuple[float, float]]


class Usage(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise Usage(message)


# -- curves ---------------------------------------------------------------------------
def value_at(curve: Curve, t: float) -> float:
    """The objective at time t: the last point at or before it (the first plan before any)."""
    best = curve[0][1]
    for at, obj in curve:
        if at > t:
            break
        best = obj
    return best


def at_marks(curve: Curve, marks: tuple[float, ...] = (5, 10, 20, 30, 60)) -> str:
    """The curve's value at each mark, as ``at 5/10/20/30/60 s CPU [v5, v10, ...]``: how the lab scripts that
    replay one proposer for a CPU budget end their line (benchmarks/results/team_scaling/2026-12-06-*)."""
    return f"at {'/'.join(f'{m:g}' for m in marks)} s CPU {[value_at(curve, m) for m in marks]}"


def time_to(curve: Curve, target: float) -> float | None:
    """The first time the curve is at or below ``target`` (None: never, within the run)."""
    for at, obj in curve:
        if obj <= target:
            return at
    return None


# -- real mode ------------------------------------------------------------------------
def real_run(args: argparse.Namespace, agents: int, seed: int, work: Path) -> dict[str, Any]:
    """One ``blockopt run`` of the product, its curve followed on its event stream."""
    token = secrets.token_urlsafe(32)
    tag = f"{args.map}-{args.scen}-k{args.robots}-a{agents}-s{seed}"
    seconds = horizon(args, agents)
    report = work / f"{tag}.json"
    argv = [
        sys.executable, "-m", "blockopt", "run", "routing", "--map", args.map, "--scen", args.scen,
        "--robots", str(args.robots), "--seed", str(seed), "--mode", "async", "--agents", str(agents),
        "--processes", str(agents), "--time-limit", str(seconds), "--stall-seconds", str(seconds),
        "--report", str(report),
    ]  # fmt: skip
    load_before = os.getloadavg()
    log = (work / f"{tag}.log").open("w")
    proc = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.PIPE, text=True, env={**os.environ, "BLOCKOPT_ADMIN_TOKEN": token}
    )
    assert proc.stderr is not None
    url = task_id = None
    for line in proc.stderr:
        log.write(line)
        found = re.search(r"coordinator at (\S+), task (\S+);", line)
        if found:
            url, task_id = found.group(1), found.group(2)
            break
    if url is None:
        proc.wait()
        raise RuntimeError(f"blockopt run ended before its coordinator started: see {work / tag}.log")
    drain = threading.Thread(target=lambda: [log.write(x) for x in proc.stderr or []], daemon=True)
    drain.start()
    cpu0, wall0 = _cpu_of(proc.pid), time.time()
    rows: list[dict[str, Any]] = []
    workers: dict[int, float] = {}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=None) as client:
        created_at = float(client.get(f"/v1/tasks/{task_id}").json()["created_at"])
        with client.stream("GET", f"/v1/tasks/{task_id}/events") as stream:
            event = ""
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "round":
                    rows.append(json.loads(line[6:]))
                    _sample_children(proc.pid, workers)
                elif line.startswith("data: ") and event == "status":
                    _sample_children(proc.pid, workers)
                    break
        cpu1, wall1 = _cpu_of(proc.pid), time.time()
        agents_cpu = sum(workers.values())
    proc.wait()
    drain.join(timeout=10)
    log.close()
    rep = json.loads(report.read_text())
    history = rep.get("history") or []
    points = (rep.get("anytime") or {}).get("points") or []
    if points:  # the head after every merge, as the virtual curve is
        curve = [(float(t), float(v)) for t, v in points]
        source = "report anytime points"
    elif history and all("t" in h for h in history):
        curve = [(0.0, float(rep["objective"]["initial"]))] + [
            (float(h["t"]), float(h["objective"])) for h in history
        ]
        source = "report t"
    else:
        curve = [(0.0, float(rep["objective"]["initial"]))]
        curve += [(float(r["closed_at"]) - created_at, float(r["objective"])) for r in rows]
        source = "event stream closed_at"
    accepted = int(rep["proposals"]["accepted"])
    coordinator_cpu = cpu1 - cpu0
    return {
        "mode": "real",
        "agents": agents,
        "seed": seed,
        "seconds": seconds,
        "curve": curve,
        "curve_source": source,
        "status": rep["status"],
        "final": rep["objective"]["final"],
        "proposals": int(rep["proposals"]["received"]),
        "accepted": accepted,
        "rejected_by_reason": rep["proposals"].get("rejected_by_reason", {}),
        "abandoned": int(rep["proposals"].get("abandoned", 0)),
        "busy_fraction": coordinator_cpu / max(1e-9, wall1 - wall0),
        "cpu_per_commit_ms": 1000 * coordinator_cpu / accepted if accepted else None,
        "coordinator_cpu_note": "CPU of the blockopt run process (embedded coordinator + its stream reader) "
        "from task creation's end to the status event, over that wall time",
        "agents_cpu_s": agents_cpu,
        "agent_core_fraction": agents_cpu / max(1e-9, agents * (wall1 - wall0)),
        "agent_core_note": "workers' CPU (start-up included) over agents x the run's wall time",
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started (its agent workers)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _sample_children(pid: int, seen: dict[int, float]) -> None:
    """The CPU each worker process has used so far (read at every round: at the end they are gone)."""
    try:
        for child in _children(pid):
            seen[child] = max(seen.get(child, 0.0), _cpu_of(child))
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass  # a worker that ended meanwhile keeps its last reading


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- virtual mode ---------------------------------------------------------------------
def virtual_run(args: argparse.Namespace, agents: int, seed: int) -> dict[str, Any]:
    """One replay, in a process of its own (``in_fresh_process``): a second replay in the same process would
    find the kind's instance and compiled code loaded, and make its first plan in a fraction of the time a
    new coordinator takes (0.6 s against 1.4 s at k = 300), a head start the first run did not have."""
    cls = kind_class("routing")
    team = cls.team_defaults(agents, "async")  # what ``blockopt run`` takes for this team (blocks, ...)
    params = {k: v for k, v in team.items() if k in cls.Params.model_fields}
    params |= {"map": args.map, "scen": args.scen, "robots": args.robots, "seed": seed}
    params |= {k: v.of(agents) if isinstance(v, PerAgent) else v for k, v in args.param}
    knobs = {k: v for k, v in team.items() if k in cls.ProposerParams.model_fields} | dict(args.knob)
    options = {}
    if args.proposer == "simulated-llm":  # the team shares one GPU, as ``blockopt run`` sets it
        options = {"concurrent_streams": str(agents), "reasoning_effort": args.effort}
    started = time.time()
    r = replay(
        ReplayConfig(
            kind="routing", params=params, agents=agents, seconds=horizon(args, agents), seed=seed,
            agent_start=args.agent_start, knobs=knobs, proposer=args.proposer, proposer_options=options,
            stop_at=args.stop_at.get(seed),
        )
    )  # fmt: skip
    plan = check(make_task(args.map, args.scen, args.robots, 2), r.solution["paths"])
    rejected = {k: v for k, v in r.verdicts.items() if k != "accepted"}
    return {
        "mode": "virtual",
        "agents": agents,
        "seed": seed,
        "seconds": horizon(args, agents),
        "ended_at": r.seconds,  # the horizon, or when the head reached --stop-at
        # the head after every accepted answer: a window closes seconds after its merges, and time-to-target
        # read at window closes would credit a team with its slowest window
        "curve": [r.curve[0], *r.commits],
        "curve_source": "commits, virtual seconds",
        "windows": r.curve,
        "status": r.status,
        "final": r.commits[-1][1] if r.commits else r.curve[-1][1],  # a run may end between window closes
        # the head's plan through our independent validator (``tasks/routing/validator.py``)
        "plan": {"valid": plan.valid, "sum_of_costs": plan.soc, "conflicts": plan.conflicts},
        "proposals": r.proposals,
        "accepted": r.accepted,
        "rejected_by_reason": rejected,
        "abandoned": r.abandoned,
        **r.summary(),
        "coordinator_cpu": r.coordinator_cpu,
        "coordinator_by_call": by_call(r.calls),
        "create_cpu": r.create_cpu,
        "agent_cpu": r.agent_cpu,
        "agent_wasted": r.agent_wasted,
        "agent_start": r.agent_start,
        "proposer": args.proposer,
        **({"agent_served": r.agent_served, "tokens": r.tokens} if r.tokens else {}),
        "wall_s": time.time() - started,
        "load_after": os.getloadavg(),
    }


def horizon(args: argparse.Namespace, agents: int) -> float:
    """Seconds of a run with ``agents`` agents: ``--time``, or its ``--time-of N=SECONDS`` override."""
    return float(args.time_of.get(agents, args.time))


def warm_up(args: argparse.Namespace) -> None:
    """Make the instance's first plan once, unmeasured: the numba functions it needs are compiled into their
    on-disk cache here (7 s at k = 300), not in the first measured run (a real deployment compiles once)."""
    cls = kind_class("routing")
    params = {"map": args.map, "scen": args.scen, "robots": args.robots, "seed": min(args.seeds), "blocks": 2}
    task = cls(cls.Params.model_validate(params))
    state = task.initial_state()
    proposer = task.make_proposer(cls.ProposerParams.model_validate({"time_budget": 0.05}))
    proposer.propose({"block": 0, "version": 0, "budget": {}, "data": task.contract(state, 0)})


def in_fresh_process(jobs: int, calls: list[tuple[Any, ...]]) -> Iterator[Any]:
    """Each call ``(function, *args)`` in a new spawned process, ``jobs`` at a time, results in call order.
    (Virtual runs book CPU time, not wall time, so two side by side on two cores measure what one alone
    does, up to shared caches.)"""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, max_tasks_per_child=1) as pool:
        futures = [pool.submit(*call) for call in calls]
        for future in futures:
            yield future.result()


def by_call(calls: list[tuple[float, float, float, str]]) -> dict[str, dict[str, float]]:
    """Coordinator calls per kind: how many, their CPU seconds, the longest (which job costs the core)."""
    out: dict[str, dict[str, float]] = {}
    for _arrival, begin, end, what in calls:
        row = out.setdefault(what, {"calls": 0, "cpu_s": 0.0, "max_ms": 0.0})
        row["calls"] += 1
        row["cpu_s"] += end - begin
        row["max_ms"] = max(row["max_ms"], 1000 * (end - begin))
    return out


# -- the table --------------------------------------------------------------------------
def one_agent_target(runs: list[dict[str, Any]], target_time: float) -> tuple[float, float | None]:
    """(Q, T1) of one seed from its one-agent runs: Q the upper median of their objectives at
    ``target_time`` (a value some run reached), T1 the upper median of the times they reached Q (a run that
    never did counts as never). One run is its own Q: runs of one seed differ by tens at k = 300."""
    q = statistics.median_high(value_at(r["curve"], target_time) for r in runs)
    t1 = statistics.median_high(time_to(r["curve"], q) or math.inf for r in runs)
    return q, None if math.isinf(t1) else t1


def table(
    runs: list[dict[str, Any]],
    at: list[float],
    target_time: float,
    repeats: Sequence[dict[str, Any]] = (),
) -> list[str]:
    """One line per (mode, N): objectives at ``at`` per seed, TN(Q), S(N), refusals, the coordinator.
    ``repeats``: more one-agent runs, pooled with each mode's own into Q and T1 (``one_agent_target``)."""
    lines = []
    for mode in sorted({r["mode"] for r in runs}):
        mine = [r for r in runs if r["mode"] == mode]
        pooled: dict[int, list[dict[str, Any]]] = {}
        for r in [*mine, *repeats]:
            if r["agents"] == 1:
                pooled.setdefault(r["seed"], []).append(r)
        if not pooled:
            lines.append(f"{mode}: no one-agent run, so no Q, T1 or S(N) (combine files with 'table')")
        targets = {s: one_agent_target(rs, target_time) for s, rs in pooled.items()}
        q = {s: got[0] for s, got in targets.items()}
        t1 = {s: got[1] for s, got in targets.items()}
        lines.append(
            f"{mode}: Q = one agent's objective at {target_time:g} s, per seed: "
            + ", ".join(
                f"seed {s} {q[s]:.0f} (T1 {t1[s]:.1f} s"
                + (
                    f"; median of {len(pooled[s])} runs: {_values(pooled[s], target_time)})"
                    if len(pooled[s]) > 1
                    else ")"
                )
                for s in sorted(q)
                if t1[s] is not None
            )
        )
        counted = any("tokens" in r for r in mine)
        head = " ".join(f"{f'{t:g} s':>15s}" for t in at)
        lines.append(
            f"{'N':>3s} {head} {'TN(Q) s':>13s} {'S(N) (median)':>18s} {'stale':>7s} {'not impr':>9s} "
            f"{'abandon':>9s} {'answers':>9s} {'busy':>6s} {'ms/commit':>10s} {'agents busy':>12s} "
            f"{'found nothing':>14s}" + (f" {'tokens to Q':>23s}" if counted else "")
        )
        medians: dict[int, Speed | None] = {}
        for n in sorted({r["agents"] for r in mine}):
            rs = sorted((r for r in mine if r["agents"] == n), key=lambda r: r["seed"])
            cells = [" / ".join(f"{value_at(r['curve'], t):.0f}" for r in rs) for t in at]
            # (a list, one per run: a file may hold several runs of one seed, as one-agent repeats do)
            tn = [time_to(r["curve"], q[r["seed"]]) if r["seed"] in q else None for r in rs]
            speed = [speed_up(t1.get(r["seed"]), t) for r, t in zip(rs, tn, strict=True)]
            known = [
                Speed.of(v, t1.get(r["seed"]), r.get("seconds"))
                for v, r in zip(speed, rs, strict=True)
                if v is not None
            ]
            medians[n] = median_speed(known)
            s_cell = " / ".join(
                speed_cell(v, t1.get(r["seed"]), r.get("seconds")) for v, r in zip(speed, rs, strict=True)
            )
            s_cell += f" ({median_speed(known)})" if len(known) > 1 else ""
            tn_cell = " / ".join("-" if t is None else f"{t:.1f}" for t in tn)
            stale = [sum(v for k, v in r["rejected_by_reason"].items() if k.startswith("stale")) for r in rs]
            worse = [sum(v for k, v in r["rejected_by_reason"].items() if "not_improving" in k) for r in rs]
            busy = statistics.median(r["busy_fraction"] for r in rs)
            per = [r["cpu_per_commit_ms"] for r in rs if r["cpu_per_commit_ms"] is not None]
            lines.append(
                f"{n:>3d} {' '.join(f'{c:>15s}' for c in cells)} {tn_cell:>13s} {s_cell:>18s} "
                f"{'/'.join(map(str, stale)):>7s} {'/'.join(map(str, worse)):>9s} "
                f"{'/'.join(str(r['abandoned']) for r in rs):>9s} "
                f"{'/'.join(str(r['proposals']) for r in rs):>9s} "
                f"{busy:>6.1%} {statistics.median(per) if per else float('nan'):>10.1f} "
                f"{_median_share(rs, agents_busy):>12s} {_median_share(rs, found_nothing):>14s}"
                + (f" {' / '.join(map(tokens_by, rs, tn)):>23s}" if counted else "")
            )
        goals = GOALS[mine[0].get("proposer", "heuristic")]
        lines += (
            shape_checks(mine, medians)
            + goal_checks(medians, goals)
            + sample_checks(mine, pooled, q, goals)
            + pace_lines(mine, pooled, at)
        )
    return lines


def timed(run: dict[str, Any], q: float) -> TimedRun:
    """A run's time to ``q`` and its length, for ``blockopt.samples``."""
    return TimedRun(time_to(run["curve"], q), float(run.get("seconds") or 0.0))


def sample_checks(
    runs: list[dict[str, Any]],
    one_agent: dict[int, list[dict[str, Any]]],
    q: dict[int, float],
    goals: dict[int, float],
) -> list[str]:
    """Each goal read from all the runs, not from medians (``blockopt.samples``): every one-agent run of a
    seed paired with every N-agent run of it, at that seed's Q. With one run of each per seed, three seeds
    can never say "above" at 5 %: the line says so rather than read a draw as a verdict."""
    out = []
    for n, goal in goals.items():
        strata = [
            ([timed(r, q[seed]) for r in one_agent[seed]], [timed(r, q[seed]) for r in team])
            for seed in sorted(q)
            if (team := [r for r in runs if r["agents"] == n and r["seed"] == seed])
        ]
        if strata:
            out.append(f"  samples, N = {n}: {stratified(strata, goal)}")
    return out


def paced(run: dict[str, Any]) -> Trace:
    """A raw run for ``blockopt.pace``: its curve and when it ended (``ended_at``: horizon or --stop-at)."""
    return Trace(run["curve"], run.get("ended_at") or run.get("seconds") or math.inf)


def pace_lines(
    runs: list[dict[str, Any]], one_agent: dict[int, list[dict[str, Any]]], at: list[float]
) -> list[str]:
    """Where along the run a team gains its speed-up, per N (``blockopt.pace``): at each ``at`` time, one
    agent's time to the team's head then (its runs of the seed), and that over the team's time."""
    out = []
    for n in sorted({r["agents"] for r in runs} - {1}):
        team = [
            PacedRun(paced(r), [paced(o) for o in one_agent[r["seed"]]])
            for r in runs
            if r["agents"] == n and r["seed"] in one_agent
        ]
        if team and at:
            paces = [pace(team, t) for t in at]
            out.append(
                f"  pace, N = {n} ({len(team)} runs), one agent's time to the team's head {reading(paces)}"
            )
    return out


def tokens_by(run: dict[str, Any], t: float | None) -> str:
    """Tokens the team had spent when it reached Q (``-``: never reached, or no tokens counted)."""
    if t is None or "tokens" not in run:
        return "-"
    spent = [n for at, n in run["tokens"] if at <= t]
    return f"{spent[-1] if spent else 0:,}"


def _values(runs: list[dict[str, Any]], t: float) -> str:
    return " / ".join(f"{value_at(r['curve'], t):.0f}" for r in runs)


def agents_busy(run: dict[str, Any]) -> float | None:
    """Virtual: the agents' CPU over N x (the run after creation and start-up); the rest they waited for
    the coordinator (its queue and its work), or for ``retry_after``."""
    if "agent_cpu" not in run or "seconds" not in run:
        return None
    span = run["seconds"] - run["create_cpu"] - run["agent_start"]
    return sum(run["agent_cpu"]) / (run["agents"] * span) if span > 0 else None


def found_nothing(run: dict[str, Any]) -> float | None:
    """Virtual: the share of the agents' CPU spent in leases they abandoned (their search found nothing)."""
    if "agent_wasted" not in run or not sum(run["agent_cpu"]):
        return None
    return sum(run["agent_wasted"]) / sum(run["agent_cpu"])


def _median_share(runs: list[dict[str, Any]], of: Any) -> str:
    got = [v for v in map(of, runs) if v is not None]
    return f"{statistics.median(got):.0%}" if got else "-"


def cpu_matched(runs: list[dict[str, Any]], at: list[float]) -> list[str]:
    """Real runs beside the virtual run of the same N and seed, read at the CPU the real agents got: on a
    busy machine an agent gets a fraction f of a core, so its wall time t is worth virtual time f x t."""
    virtual = {(r["agents"], r["seed"]): r for r in runs if r["mode"].startswith("virtual")}
    lines = []
    for r in sorted(
        (r for r in runs if r["mode"].startswith("real")), key=lambda r: (r["mode"], r["agents"], r["seed"])
    ):
        v = virtual.get((r["agents"], r["seed"]))
        f = r.get("agent_core_fraction")
        if v is None or f is None:
            continue
        cells = ", ".join(
            f"{t:g} s: real {value_at(r['curve'], t):.0f} / virtual {value_at(v['curve'], f * t):.0f}"
            for t in at
        )
        lines.append(
            f"  CPU-matched {r['mode']} N={r['agents']} seed {r['seed']} (agents got {f:.0%} of a core, load "
            f"{r['load_before'][0]:.1f}): {cells}; answers in the run: real {r['proposals']}, "
            f"virtual {v['proposals']}"
        )
    return lines


def speed_cell(speed: float | None, t1: float | None, seconds: float | None) -> str:
    """S(N) as the table shows it: ``<b`` where N agents did not reach Q within their run of ``seconds``
    (S is below T1 / seconds), ``-`` where one agent's T1 is unknown."""
    if speed is None:
        return "-"
    if speed == 0.0 and t1 is not None and seconds:
        return f"<{t1 / seconds:.2f}"
    return f"{speed:.2f}"


class Speed(NamedTuple):
    """S(N) of one run, or its bound: ``below`` where N agents did not reach Q within their run, so S is
    below ``value`` (T1 / the run's seconds) and may be anything under it."""

    value: float
    below: bool = False

    @classmethod
    def of(cls, speed: float, t1: float | None, seconds: float | None) -> Speed:
        """From ``speed_up``'s value (0: not reached) and the run's T1 and length."""
        if speed == 0.0 and t1 is not None and seconds:
            return cls(t1 / seconds, below=True)
        return cls(speed)

    def __str__(self) -> str:
        return f"<{self.value:.2f}" if self.below else f"{self.value:.2f}"


def median_speed(speeds: Sequence[Speed]) -> Speed | None:
    """The lower median by value, bound or not: a median that is a bound is one ("<b"), never 0."""
    ordered = sorted(speeds, key=lambda s: s.value)
    return ordered[(len(ordered) - 1) // 2] if ordered else None


GOALS = {"heuristic": {4: 3.0, 8: 5.0, 16: 8.0}, "simulated-llm": {6: 2.0}}
"""Issue 31's done-when in virtual mode, per proposer (medians over seeds): the heuristic S(4) >= 3,
S(8) >= 5, S(16) >= 8; simulated GPT-OSS-120B agents S(6) >= 2 (six reach one agent's final objective in
half its time, the research's claim)."""


def goal_checks(medians: dict[int, Speed | None], goals: dict[int, float] = GOALS["heuristic"]) -> list[str]:
    """The done-when lines: each goal met, BELOW, or UNDECIDED (the median run stopped before Q with a bound
    above the goal: run it longer), and whether S falls as N grows (said only where the larger team's S is
    known to be lower: a bound can hide a fall, never make one up)."""
    out = []
    for n, goal in goals.items():
        got = medians.get(n)
        if got is not None:
            verdict = "BELOW" if got.value < goal else "UNDECIDED (runs too short)" if got.below else ">="
            out.append(f"  goal: S({n}) {got} {verdict} {goal:g}")
    known = [(n, s) for n, s in sorted(medians.items()) if s is not None]
    steps = zip(known, known[1:], strict=False)
    falls, hidden = [], []
    for (a, x), (b, y) in steps:
        if not x.below and y.value < x.value:  # y is below x whether it is a value or a bound
            falls.append(f"S({a}) {x} > S({b}) {y}")
        elif x.below or y.below:
            hidden.append(f"S({a}) {x} to S({b}) {y}")
    if falls:
        out.append(f"  goal: S falls: {'; '.join(falls)}")
    elif hidden:
        out.append(f"  goal: S not known to fall, but a bound may hide a fall: {', '.join(hidden)}")
    elif len(known) > 1:
        out.append("  goal: S never falls as N grows")
    return out


def speed_up(t1: float | None, tn: float | None) -> float | None:
    """T1/TN; 0 when N agents never reached Q within the run; None when one agent's T1 is unknown."""
    if t1 is None:
        return None
    if tn is None:
        return 0.0
    return t1 / tn if tn > 0 else float("inf")


def shape_checks(runs: list[dict[str, Any]], medians: dict[int, Speed | None]) -> list[str]:
    """The issue-31 table's shape on today's code: S(12) below S(2), and 12 agents behind one at 30 s."""
    by = {(r["agents"], r["seed"]): r for r in runs}
    out = []
    pairs = [
        (value_at(by[(12, s)]["curve"], 30.0), value_at(by[(1, s)]["curve"], 30.0))
        for n, s in by
        if n == 12 and (1, s) in by
    ]
    if pairs:
        behind = sum(twelve > one for twelve, one in pairs)
        out.append(f"  shape: 12 agents behind one at 30 s on {behind} of {len(pairs)} seeds")
    s2, s12 = medians.get(2), medians.get(12)
    if s2 is not None and s12 is not None:
        below = s12.value < s2.value and not s2.below
        out.append(f"  shape: S(12) {s12} {'below' if below else 'NOT below'} S(2) {s2} (medians)")
    return out


# -- command line -----------------------------------------------------------------------
def knob(text: str) -> tuple[str, float | str]:
    """``NAME=VALUE`` of ``--knob`` (the kind's ProposerParams check the name and the value): a number where
    it reads as one, else the text (a flag's ``true``)."""
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got '{text}'")
    try:
        return name, float(value)
    except ValueError:
        return name, value


@dataclass(frozen=True)
class PerAgent:
    """A parameter given as a multiple of the team size (``blocks=2N``)."""

    k: float

    def of(self, agents: int) -> int:
        return max(1, round(self.k * agents))


def param(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` of ``--param``: a number, ``kN`` (k times the team size, for ``blocks``), true or
    false, or a word (``initial=shortest``; the kind's parameters check it)."""
    name, eq, value = text.partition("=")
    if not name or not eq or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got '{text}'")
    if re.fullmatch(r"[0-9.]*N", value):
        return name, PerAgent(float(value[:-1] or 1))
    if value in ("true", "false"):
        return name, value == "true"
    try:
        number = float(value)
    except ValueError:
        return name, value
    return name, int(number) if number.is_integer() else number


def whole_to_number(text: str, form: str) -> tuple[int, float]:
    """``N=X``: a whole number, a number."""
    try:
        n, x = text.split("=")
        return int(n), float(x)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {form}, got '{text}'") from None


def time_of(text: str) -> tuple[int, float]:
    """``N=SECONDS`` of ``--time-of``."""
    return whole_to_number(text, "N=SECONDS")


def stop_at(text: str) -> tuple[int, float]:
    """``SEED=OBJECTIVE`` of ``--stop-at``."""
    return whole_to_number(text, "SEED=OBJECTIVE")


def parse(argv: list[str]) -> argparse.Namespace:
    p = Parser(prog="team_scaling", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("mode", choices=["real", "virtual", "table"])
    p.add_argument("files", nargs="*", type=Path, help="table: raw result files to combine")
    p.add_argument("--map", default="random-32-32-10")
    p.add_argument("--scen", default="random-1")
    p.add_argument("--robots", type=int, default=300)
    p.add_argument("--agents", type=int, nargs="+", default=[1, 2, 4, 8, 12])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    p.add_argument(
        "--time", type=float, default=30.0, help="seconds per run (virtual seconds in virtual mode)"
    )
    pairs = (
        ("--time-of", time_of, "N=SECONDS", "another horizon for N agents (a team that must reach Q in T1/S"
         " only needs that long)"),
        ("--knob", knob, "NAME=VALUE", "virtual: a proposer knob for every run (routing: time_budget,"
         " stop_after, answer_after, neighbourhood, follow_every)"),
        ("--param", param, "NAME=VALUE", "virtual: a task parameter for every run; VALUE may be a multiple"
         " of the team, e.g. blocks=2N"),
        ("--stop-at", stop_at, "SEED=OBJECTIVE", "virtual: a run of SEED ends once its head is at or below"
         " OBJECTIVE (the head never rises: that value holds at any later time)"),
    )  # fmt: skip
    for flag, read, metavar, text in pairs:  # NAME=VALUE options, read by their own parser; given twice, both
        p.add_argument(flag, type=read, nargs="+", action="extend", default=[], metavar=metavar, help=text)
    p.add_argument("--jobs", type=int, default=1, help="virtual: runs side by side (each in its own process)")
    p.add_argument(
        "--proposer",
        choices=sorted(GOALS),
        default="heuristic",
        help="virtual: the agents' proposer (simulated-llm: the heuristic, GPT-OSS-120B's serving latency)",
    )
    p.add_argument(
        "--effort", choices=["low", "medium", "high"], default="low", help="simulated-llm: reasoning effort"
    )
    p.add_argument("--at", type=float, nargs="+", default=[15.0, 30.0], help="times the table shows")
    p.add_argument(
        "--target-time", type=float, default=None, help="Q = one agent's objective then (default --time)"
    )
    p.add_argument(
        "--agent-start", type=float, default=None, help="virtual: worker start-up s (default measured)"
    )
    p.add_argument("--out", type=Path, default=None, help="write the raw runs here (JSON)")
    p.add_argument(
        "--one-agent-repeats",
        type=Path,
        nargs="+",
        default=[],
        metavar="FILE",
        help="table: more one-agent runs (raw files) pooled into each seed's Q and T1",
    )
    p.add_argument(
        "--pool",
        action="store_true",
        help="table: runs of one mode, N and seed from several files share a row (each run a value, S(N) the"
        " median of all) instead of a table per file",
    )
    args = p.parse_args(argv)
    args.time_of = dict(args.time_of)
    args.stop_at = dict(args.stop_at)
    if args.target_time is None:
        args.target_time = args.time if args.mode != "table" else max(args.at)
    if args.mode == "table" and not args.files:
        raise Usage("table needs one or more raw result files")
    if args.mode != "table" and args.files:
        raise Usage(f"{args.mode} takes no files (did you mean 'table'?)")
    for name, value in (("--time", args.time), ("--robots", args.robots), ("--agents", min(args.agents))):
        if value <= 0:
            raise Usage(f"{name} must be positive, got {value:g}")
    if args.mode != "table" and 1 in args.agents and args.target_time > horizon(args, 1):
        raise Usage(f"--target-time {args.target_time:g} is beyond one agent's run ({horizon(args, 1):g} s)")
    if args.jobs < 1:
        raise Usage(f"--jobs must be at least 1, got {args.jobs}")
    for f in [*args.files, *args.one_agent_repeats]:
        if not f.is_file():
            raise Usage(f"no such result file: {f}")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
    except Usage as exc:
        print(f"team_scaling: error: {exc}", file=sys.stderr)
        return 2
    if args.mode == "table":
        runs = load_runs(args.files, pool=args.pool)
    else:
        runs = []
        work = Path(tempfile.mkdtemp(prefix="team-scaling-"))
        cells = [(seed, n) for seed in args.seeds for n in args.agents]
        list(in_fresh_process(1, [(warm_up, args)]))  # numba's cache filled: no run compiles the kernels
        if args.mode == "real":
            done: Iterator[dict[str, Any]] = (real_run(args, n, seed, work) for seed, n in cells)
        else:
            done = in_fresh_process(args.jobs, [(virtual_run, args, n, seed) for seed, n in cells])
        for run in done:
            runs.append(run)
            print(
                f"{args.mode} N={run['agents']} seed {run['seed']}: final {run['final']:.0f}, "
                f"{run['proposals']} answers, busy {run['busy_fraction']:.1%}, load {os.getloadavg()[0]:.2f}",
                file=sys.stderr,
                flush=True,
            )
            if args.out is not None:
                write(args, runs)
    repeats = [
        r for f in args.one_agent_repeats for r in json.loads(f.read_text())["runs"] if r["agents"] == 1
    ]
    for line in table(runs, args.at, args.target_time, repeats) + cpu_matched(runs, args.at):
        print(line)
    return 0


def load_runs(files: list[Path], pool: bool = False) -> list[dict[str, Any]]:
    """Runs of several files; where two files hold the same (mode, N, seed), each file's runs keep their
    own table (mode labelled with the file's name) instead of mixing, unless ``pool``: repeats of one
    configuration (a team's runs of a seed differ by tens at 300 robots, as one agent's do)."""
    per_file = [(f, json.loads(f.read_text())["runs"]) for f in files]
    if pool:
        return [r for _, rs in per_file for r in rs]
    keys = [(r["mode"], r["agents"], r["seed"]) for _, rs in per_file for r in rs]
    clash = {k for k in keys if keys.count(k) > 1}
    runs = []
    for f, rs in per_file:
        label = any((r["mode"], r["agents"], r["seed"]) in clash for r in rs)
        runs += [{**r, "mode": f"{r['mode']} {f.stem}"} if label else r for r in rs]
    return runs


def write(args: argparse.Namespace, runs: list[dict[str, Any]]) -> None:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    config = {k: v for k, v in vars(args).items() if k != "files"}
    args.out.write_text(
        json.dumps({"command": sys.argv, "config": config, "runs": runs}, indent=1, default=str)
    )


if __name__ == "__main__":
    sys.exit(main())
