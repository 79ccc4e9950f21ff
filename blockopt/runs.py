"""``blockopt run``: drive one task to the end, show progress, write the report and pictures."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from pydantic import BaseModel, SecretStr

from agents.fleet import spawn, terminate
from agents.worker import WorkerConfig
from blockopt.budgets import rounds_budget, run_budgets
from coordinator.api.embedded import EmbeddedServer
from coordinator.api.main import create_app
from coordinator.engine.forecast import StopWhen
from coordinator.engine.rounds import EngineSettings, RoundOutcome
from coordinator.reports.anytime import time_to_target
from coordinator.reports.ledger import Report, RunLedger, build_report, history_fields, relative_gap
from coordinator.reports.plots import PlotAxis, convergence_plot
from coordinator.runtime import heap
from coordinator.runtime.datapaths import dirs_for
from coordinator.runtime.inproc import RunResult, RunSettings, run_inproc
from coordinator.settings import ServiceSettings
from coordinator.store import make_store
from coordinator.ui.hint import live_view_hint, serve_until_interrupted
from tasks import capabilities
from tasks.base import Reference, Task


def progress_line(outcome: RoundOutcome, ledger: RunLedger) -> str:
    return progress_row(history_fields(outcome.record), ledger.reference, ledger.forecast().model_dump())


def report_of(result: RunResult, agents: int) -> Report:
    task = result.task
    return build_report(
        result.ledger,
        task_info={
            "kind": task.kind,
            "name": task.name,
            "blocks": task.n_blocks,
            "params": task.params.model_dump(),
        },
        agents=agents,
        merge_policy=result.engine.settings.merge_policy,
        status=result.status,
        final_objective=result.snapshot.objective,
        feasible=task.feasible(result.snapshot.state),
        status_reason=result.reason,
    )


def _g(value: float | None, fmt: str = ".4g") -> str:
    return "-" if value is None else format(value, fmt)


def summary_lines(report: Report) -> list[str]:
    o, c, f = report.objective, report.constants, report.forecast
    one, env, prior = report.checks["one_step"], report.checks["envelope"], report.checks.get("a_priori")
    constants = (
        f"  constants over {c.steps} steps: kappa {_g(c.kappa)}, gamma [{_g(c.gamma_min)}, {_g(c.gamma_max)}],"
        f" delta {_g(c.delta_max)}; "
        + (
            f"rate {_g(c.rate)}, floor {_g(c.floor)}"
            if c.informative
            else "no informative bound (rate 1 or floor above the gap)"
        )
    )
    checks = (
        f"  one-step forecast ({one['coverage_target']:.0%} target): {one['hits']}/{one['rounds']} hit, "
        f"median tightness {_g(one['tightness_median'], '.3g')}; envelope from first {env['window']} steps: "
        f"{env['hits']}/{env['rounds']} hit, ETA predicted {_g(env['eta_rounds_predicted'], 'd')} "
        f"vs actual {_g(env['eta_rounds_actual'], 'd')} rounds"
    )
    lines = [
        f"{report.task['name']}: {report.status} after {report.rounds} rounds in {report.wall_s:.2f}s "
        f"({report.agents} agents, {report.merge_policy} merging)",
        f"  objective {o['initial']:.10g} -> {o['final']:.10g}; {o['reference_kind']} {o['reference']:.10g}; "
        f"relative gap {_relative(o['relative_gap'], o['reference'], 3)}; feasible {report.feasible}",
        f"  proposals {report.proposals['received']} received, {report.proposals['accepted']} accepted, "
        f"{report.proposals['rejected']} rejected",
        f"  status: {report.status}" + (f" ({report.status_reason})" if report.status_reason else ""),
        constants,
        checks,
    ]
    if prior is not None:
        k = prior["constants"]
        lines.append(
            f"  a priori bound (mu {k['mu']:.4g}, lambda {k['lambda']:.4g}, m {k['m']:g}): held in "
            f"{prior['rounds_held']}/{prior['rounds_checked']} checked rounds; precondition failed in "
            f"{prior['rounds_precondition_failed']}"
        )
    lines.append(
        f"  forecast: limit {_g(f.limit, '.10g')}, remaining {_g(f.remaining)}, ETA {_g(f.eta_rounds, 'd')}"
        f" rounds / {_g(f.eta_seconds, '.3g')} s to {f.eta_target or '-'} (eps {f.epsilon:g}); gain per 1k "
        f"tokens {_g(f.gain_per_1k_tokens)}, per agent-second {_g(f.gain_per_agent_second)}"
    )
    lines.append(usage_line(report))
    if report.anytime is not None and report.anytime.get("timed"):
        lines.append(anytime_line(report.anytime))
    if report.selection is not None:
        lines.append(selection_line(report.selection))
    return lines


def selection_line(view: dict[str, Any]) -> str:
    """Adaptive selection's learned weights, best first: generator weight (rounds credited, size)."""
    gens = view["generators"]
    ranked = sorted(
        gens, key=lambda g: -(gens[g]["weight"] if gens[g]["weight"] is not None else float("inf"))
    )
    parts = [
        f"{g} {_g(gens[g]['weight'], '.3g') if gens[g]['weight'] is not None else 'untried'}"
        f" ({gens[g]['pulls']} rounds, size {gens[g]['size']:.2f})"
        for g in ranked
    ]
    return f"  neighbourhoods ({view['policy']}): " + ", ".join(parts)


def anytime_line(anytime: dict[str, Any]) -> str:
    """The anytime section in one line: the normalized primal integral, then the time to each target."""
    targets = ", ".join(
        (f"{row['relative_gap']:.2%}" if row["relative_gap"] is not None else f"F={row['objective']:.10g}")
        + f" {_g(row['seconds'], '.2f')}"
        + ("" if row["seconds"] is None else " s")
        for row in anytime["time_to_target"]
    )
    return (
        f"  anytime: primal integral / T {_g(anytime['primal_integral_normalized'], '.4g')} over "
        f"{anytime['horizon']:.3g} s against the {anytime['reference_kind'].replace('_', ' ')}; time to "
        + (targets or "-")
    )


def with_targets(report: Report, targets: list[float]) -> Report:
    """The report with the time its curve first reached each user target (``--target``) in its anytime section."""
    if not targets or report.anytime is None:
        return report
    points = [(float(t), float(f)) for t, f in report.anytime["points"]]
    rows = [{"relative_gap": None, "objective": q, "seconds": time_to_target(points, q)} for q in targets]
    anytime = {**report.anytime, "time_to_target": [*report.anytime["time_to_target"], *rows]}
    return report.model_copy(update={"anytime": anytime})


def usage_line(report: Report) -> str:
    u = report.usage
    per = u.get("tokens_per_unit_improvement")
    solved = u.get("tokens_per_solved_task")
    return (
        f"  usage {u.get('tokens', 0)} tokens ({u.get('prompt_tokens', 0)} prompt, "
        f"{u.get('completion_tokens', 0)} completion), {u.get('calls', 0)} calls; "
        f"{report.proposals.get('abandoned', 0)} leases abandoned; tokens per unit improvement "
        f"{'-' if per is None else f'{per:.4g}'}, per solved task {'-' if solved is None else solved}"
    )


def write_outputs(
    report: Report, task: Task[Any], state: Any, path: Path, plot_x: PlotAxis = "rounds"
) -> list[str]:
    """Pictures first: a kind may measure things while drawing (sqlplan's baselines) that its solution reports."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stem = str(path.with_suffix(""))
    pictures = [
        convergence_plot(report, stem + "-convergence.png", plot_x),
        *capabilities.pictures(task, state, stem),
    ]
    report = report.model_copy(update={"solution": task.solution(state)})
    path.write_text(report.model_dump_json(indent=2))
    return [str(path), *pictures]


def execute_run(task: Task[Any], knobs: BaseModel, args: argparse.Namespace) -> Report:
    settings = RunSettings(
        agents=args.agents,
        max_rounds=rounds_budget(args.max_rounds, args.time_limit),
        time_limit=args.time_limit,
        seed=task.run_seed(),
        envelope_window=args.window,
        stop_when=stop_when_of(args),
    )
    engine_settings = EngineSettings(merge_policy=args.merge)

    def show(outcome: RoundOutcome, ledger: RunLedger) -> None:
        if not args.quiet:
            print(progress_line(outcome, ledger), file=sys.stderr, flush=True)

    result = run_inproc(task, knobs, settings, engine_settings, on_round=show)
    report = with_targets(report_of(result, args.agents), getattr(args, "target", None) or [])
    for line in summary_lines(report):
        print(line)
    if args.report is not None:
        for written in write_outputs(
            report, task, result.snapshot.state, args.report, getattr(args, "plot_x", "rounds")
        ):
            print(f"  wrote {written}")
    return report


def stop_when_of(args: argparse.Namespace) -> StopWhen | None:
    per_tokens = getattr(args, "stop_gain_per_1k_tokens", None)
    per_second = getattr(args, "stop_gain_per_agent_second", None)
    if per_tokens is None and per_second is None:
        return None
    return StopWhen(gain_per_1k_tokens=per_tokens, gain_per_agent_second=per_second)


def load_report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _relative(gap: float, reference: float, digits: int = 2) -> str:
    """A relative gap to a reference of 0 (sqlplan's lower bound) says nothing: print the absolute one only."""
    return f"{gap:.{digits}e}" if abs(reference) > 1e-12 else "-"


def progress_row(row: dict[str, Any], reference: Reference, forecast: dict[str, Any] | None = None) -> str:
    """One round: the gap against its one-step forecast (hit/miss), the a priori check, then the forecast."""
    rel = _relative(relative_gap(row["objective"], reference), reference.value)
    predicted = row.get("predicted_gap")
    one = "-" if predicted is None else f"{predicted:.3e} {'hit' if row.get('hit') else 'MISS'}"
    prior = {True: "  a-priori held", False: "  a-priori FAILED", None: ""}[row.get("a_priori_held")]
    line = (
        f"round {row['round']:4d}  F={row['objective']:.10g}  gap={row['gap']:.3e} (rel {rel})  "
        f"merged {row['merged']}/{row['proposals']}  edges {row['interfering']}  "
        f"{row['merge_kind']:<19s} forecast {one}{prior}" + ("  regrouped" if row.get("regrouped") else "")
    )
    if forecast and forecast.get("limit") is not None:
        line += f"  | limit {forecast['limit']:.8g} ETA {_g(forecast.get('eta_rounds'), 'd')} rounds"
    return line


def _follow(client: httpx.Client, task_id: str, reference: Reference, quiet: bool) -> None:
    """Print round events from the SSE stream until the task's status event."""
    with client.stream("GET", f"/v1/tasks/{task_id}/events", timeout=None) as stream:
        event, row = "", None
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if event == "round":
                    if row is not None and not quiet:
                        print(progress_row(row, reference), file=sys.stderr, flush=True)
                    row = data
                if event == "forecast" and row is not None:
                    if not quiet:
                        print(progress_row(row, reference, data), file=sys.stderr, flush=True)
                    row = None
                if event == "status":
                    if row is not None and not quiet:
                        print(progress_row(row, reference), file=sys.stderr, flush=True)
                    return


def _prepared(client: httpx.Client, task_id: str, quiet: bool) -> dict[str, Any]:
    """The task's view once its kind has prepared it (reference, first plan): ``preparing`` is waited out,
    a failed preparation raised with the coordinator's reason."""
    view: dict[str, Any] = client.get(f"/v1/tasks/{task_id}").json()
    if view["status"] == "preparing" and not quiet:
        print(f"task {task_id}: the coordinator is preparing it...", file=sys.stderr, flush=True)
    while view["status"] == "preparing":
        time.sleep(0.2)
        view = client.get(f"/v1/tasks/{task_id}").json()
    if view["status"] == "failed":
        raise RuntimeError(f"the coordinator could not prepare the task: {view['reason']}")
    return view


def execute_service_run(task: Task[Any], knobs: BaseModel, args: argparse.Namespace) -> Report:
    """The real path: an embedded coordinator on a loopback port and a fleet of worker processes over HTTP."""
    own_token = os.environ.get("BLOCKOPT_ADMIN_TOKEN")  # the user's own: used, never printed
    admin = own_token or secrets.token_urlsafe(24)
    settings = ServiceSettings(
        admin_token=SecretStr(admin),
        lease_ttl=args.lease_ttl,
        round_deadline=args.round_deadline,  # paths named on our own command line:
        data_dirs=dirs_for(type(task.params), task.params.model_dump()),
        **getattr(args, "store_settings", {"store": "memory"}),
    )
    app = create_app(settings, make_store(settings), CollectorRegistry())
    heap.settle()  # this process is the coordinator's, as `blockopt serve`'s is
    with (
        EmbeddedServer(app) as server,
        httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {admin}"}, timeout=60.0
        ) as client,
    ):
        budgets = run_budgets(args.max_rounds, args.time_limit)
        r = client.post(
            "/v1/tasks",
            json={
                "kind": task.kind,
                "params": task.params.model_dump(),
                "merge_policy": args.merge,
                "mode": args.mode,
                **({"regroup_after": r} if (r := getattr(args, "regroup_after", None)) else {}),
                "budgets": budgets,
                "proposer": {"name": getattr(args, "proposer", "heuristic"), "knobs": knobs.model_dump()},
                "window": args.window,
                "selection": {
                    "policy": getattr(args, "selection", "lease_order"),
                    "hold": getattr(args, "hold", False),
                },
                **({"stop_when": sw.model_dump()} if (sw := stop_when_of(args)) is not None else {}),
                **({"stop": {"stall_seconds": s}} if (s := getattr(args, "stall_seconds", None)) else {}),
            },
        )
        if r.status_code != 201:
            raise RuntimeError(f"the coordinator refused the task: {r.text}")
        created = r.json()
        task_id = created["id"]
        view = _prepared(client, task_id, args.quiet)
        reference = Reference(view["reference"], view["reference_kind"])
        if not args.quiet:
            print(
                f"coordinator at {server.url}, task {task_id}; starting {args.agents} agents "
                f"in {min(args.processes, args.agents)} processes",
                file=sys.stderr,
                flush=True,
            )
        print(
            live_view_hint(server.url, task_id, None if own_token else admin, getattr(args, "ui", False)),
            file=sys.stderr,
            flush=True,
        )
        base = WorkerConfig(
            coordinator=server.url,
            task=task_id,
            join_token=created["join_token"],
            seed=task.run_seed(),
            proposer=getattr(args, "proposer", "heuristic"),
            proposer_options=getattr(args, "proposer_options", {}),
        )
        children = spawn(base, args.agents, args.processes, log_level="warning")
        try:
            _follow(client, task_id, reference, args.quiet)
        finally:
            terminate(children)
        report = Report.model_validate(client.get(f"/v1/tasks/{task_id}/report").json())
        state = capabilities.load_state(task, client.get(f"/v1/tasks/{task_id}/solution").json()["state"])
        if getattr(args, "ui", False):
            print_outputs(report, task, state, args)
            serve_until_interrupted(f"{server.url}/ui/#/tasks/{task_id}")
            return report
    print_outputs(report, task, state, args)
    return report


def print_outputs(report: Report, task: Task[Any], state: Any, args: argparse.Namespace) -> None:
    report = with_targets(report, getattr(args, "target", None) or [])
    for line in summary_lines(report):
        print(line)
    if args.report is not None:
        for written in write_outputs(report, task, state, args.report, getattr(args, "plot_x", "rounds")):
            print(f"  wrote {written}")
