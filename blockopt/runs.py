"""``blockopt run``: drive one task to the end, show progress, write the report and pictures."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from pydantic import BaseModel, SecretStr

from agents.fleet import spawn, terminate
from agents.worker import WorkerConfig
from coordinator.app import create_app
from coordinator.embedded import EmbeddedServer
from coordinator.ui.hint import live_view_hint, serve_until_interrupted
from coordinator.settings import ServiceSettings
from coordinator.store import MemoryStore

from coordinator.engine import EngineSettings, RoundOutcome
from coordinator.inproc import RunResult, RunSettings, run_inproc
from coordinator.ledger import Report, RunLedger, build_report, relative_gap
from coordinator.plots import convergence_plot
from tasks.base import Reference, Task


def progress_line(outcome: RoundOutcome, ledger: RunLedger) -> str:
    return progress_row(outcome.record.model_dump(), ledger.reference)


def report_of(result: RunResult, agents: int) -> Report:
    task = result.task
    return build_report(
        result.ledger,
        task_info={"kind": task.kind, "name": task.name, "blocks": task.n_blocks,
                   "params": task.params.model_dump()},
        agents=agents,
        merge_policy=result.engine.settings.merge_policy,
        status=result.status,
        final_objective=result.snapshot.objective,
        feasible=task.feasible(result.snapshot.state),
    )


def summary_lines(report: Report) -> list[str]:
    o, b = report.objective, report.bound
    return [
        f"{report.task['name']}: {report.status} after {report.rounds} rounds in {report.wall_s:.2f}s "
        f"({report.agents} agents, {report.merge_policy} merging)",
        f"  objective {o['initial']:.10g} -> {o['final']:.10g}; {o['reference_kind']} {o['reference']:.10g}; "
        f"relative gap {_relative(o['relative_gap'], o['reference'], 3)}; feasible {report.feasible}",
        f"  proposals {report.proposals['received']} received, {report.proposals['accepted']} accepted, "
        f"{report.proposals['rejected']} rejected",
        f"  bound held in {b.rounds_held}/{b.rounds_checked} rounds; kappa {b.kappa}, gamma [{b.gamma_min}, "
        f"{b.gamma_max}], delta {b.delta_max}; rate {b.rate}, floor {b.floor}; "
        f"envelope from first {b.envelope_window} rounds held {b.envelope_rounds_held}/{b.envelope_rounds_checked}",
        usage_line(report),
    ]


def usage_line(report: Report) -> str:
    u = report.usage
    per = u.get("tokens_per_unit_improvement")
    solved = u.get("tokens_per_solved_task")
    return (f"  usage {u.get('tokens', 0)} tokens ({u.get('prompt_tokens', 0)} prompt, "
            f"{u.get('completion_tokens', 0)} completion), {u.get('calls', 0)} calls; "
            f"{report.proposals.get('abandoned', 0)} leases abandoned; tokens per unit improvement "
            f"{'-' if per is None else f'{per:.4g}'}, per solved task {'-' if solved is None else solved}")


def write_outputs(report: Report, task: Task[Any], state: Any, path: Path) -> list[str]:
    """Pictures first: a kind may measure things while drawing (sqlplan's baselines) that its solution reports."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stem = str(path.with_suffix(""))
    pictures = [convergence_plot(report, stem + "-convergence.png"), *task.pictures(state, stem)]
    report = report.model_copy(update={"solution": task.solution(state)})
    path.write_text(report.model_dump_json(indent=2))
    return [str(path), *pictures]


def execute_run(task: Task[Any], knobs: BaseModel, args: argparse.Namespace) -> Report:
    settings = RunSettings(
        agents=args.agents, max_rounds=args.max_rounds, time_limit=args.time_limit,
        seed=getattr(args, "seed", 0), envelope_window=args.window,
    )
    engine_settings = EngineSettings(merge_policy=args.merge)

    def show(outcome: RoundOutcome, ledger: RunLedger) -> None:
        if not args.quiet:
            print(progress_line(outcome, ledger), file=sys.stderr, flush=True)

    result = run_inproc(task, knobs, settings, engine_settings, on_round=show)
    report = report_of(result, args.agents)
    for line in summary_lines(report):
        print(line)
    if args.report is not None:
        for written in write_outputs(report, task, result.snapshot.state, args.report):
            print(f"  wrote {written}")
    return report


def load_report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _relative(gap: float, reference: float, digits: int = 2) -> str:
    """A relative gap to a reference of 0 (sqlplan's lower bound) says nothing: print the absolute one only."""
    return f"{gap:.{digits}e}" if abs(reference) > 1e-12 else "-"


def progress_row(row: dict[str, Any], reference: Reference) -> str:
    rel = _relative(relative_gap(row["objective"], reference), reference.value)
    held = {True: "held", False: "VIOLATED", None: "-"}[row["held"]]
    return (
        f"round {row['round']:4d}  F={row['objective']:.10g}  gap={row['gap']:.3e} (rel {rel})  "
        f"merged {row['accepted']}/{row['proposals']}  edges {row['interfering']}  "
        f"{row['merge_kind']:<19s} bound {held}" + ("  regrouped" if row.get("regrouped") else "")
    )


def _follow(client: httpx.Client, task_id: str, reference: Reference, quiet: bool) -> None:
    """Print round events from the SSE stream until the task's status event."""
    with client.stream("GET", f"/v1/tasks/{task_id}/events", timeout=None) as stream:
        event = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if event == "round" and not quiet:
                    print(progress_row(data, reference), file=sys.stderr, flush=True)
                if event == "status":
                    return


def execute_service_run(task: Task[Any], knobs: BaseModel, args: argparse.Namespace) -> Report:
    """The real path: an embedded coordinator on a loopback port and a fleet of worker processes over HTTP."""
    own_token = os.environ.get("BLOCKOPT_ADMIN_TOKEN")  # the user's own: used, never printed
    admin = own_token or secrets.token_urlsafe(24)
    settings = ServiceSettings(admin_token=SecretStr(admin), lease_ttl=args.lease_ttl,
                               round_deadline=args.round_deadline)
    app = create_app(settings, MemoryStore(), CollectorRegistry())
    with EmbeddedServer(app) as server, httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {admin}"}, timeout=60.0
    ) as client:
        budgets: dict[str, Any] = {"rounds": args.max_rounds}
        if args.time_limit is not None:
            budgets["seconds"] = args.time_limit
        r = client.post("/v1/tasks", json={
            "kind": task.kind, "params": task.params.model_dump(), "merge_policy": args.merge, "mode": args.mode,
            "budgets": budgets, "proposer": {"name": getattr(args, "proposer", "heuristic"), "knobs": knobs.model_dump()},
            "window": args.window,
        })
        if r.status_code != 201:
            raise RuntimeError(f"the coordinator refused the task: {r.text}")
        created = r.json()
        task_id = created["id"]
        view = client.get(f"/v1/tasks/{task_id}").json()
        reference = Reference(view["reference"], view["reference_kind"])
        if not args.quiet:
            print(f"coordinator at {server.url}, task {task_id}; starting {args.agents} agents "
                  f"in {min(args.processes, args.agents)} processes", file=sys.stderr, flush=True)
        print(live_view_hint(server.url, task_id, None if own_token else admin, getattr(args, "ui", False)), file=sys.stderr, flush=True)
        base = WorkerConfig(coordinator=server.url, task=task_id, join_token=created["join_token"],
                            seed=getattr(args, "seed", 0), proposer=getattr(args, "proposer", "heuristic"),
                            proposer_options=getattr(args, "proposer_options", {}))
        children = spawn(base, args.agents, args.processes, log_level="warning")
        try:
            _follow(client, task_id, reference, args.quiet)
        finally:
            terminate(children)
        report = Report.model_validate(client.get(f"/v1/tasks/{task_id}/report").json())
        state = task.load_state(client.get(f"/v1/tasks/{task_id}/solution").json()["state"])
        if getattr(args, "ui", False):
            print_outputs(report, task, state, args)
            serve_until_interrupted(f"{server.url}/ui/#/tasks/{task_id}")
            return report
    print_outputs(report, task, state, args)
    return report


def print_outputs(report: Report, task: Task[Any], state: Any, args: argparse.Namespace) -> None:
    for line in summary_lines(report):
        print(line)
    if args.report is not None:
        for written in write_outputs(report, task, state, args.report):
            print(f"  wrote {written}")
