"""The ``blockopt`` command line: the one place that wires the coordinator and the agents together.

Each task kind's options are generated from its ``Params`` and ``ProposerParams``
models, so a new kind gets ``blockopt run KIND --its-options`` for free.
Bad input prints one line and exits with code 2.

One job over 400 lines: the command line's parsers and their dispatch, so every command's options are found
in one place.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from blockopt.budgets import DEFAULT_MAX_ROUNDS
from blockopt.logs import setup_logging
from blockopt.service_flags import add_settings_options
from coordinator.settings import weak_token_reason
from coordinator.status import EXIT_CODES, TaskStatus
from tasks import capabilities
from tasks.base import RUNNER_OPTIONS
from tasks.registry import InvalidParams, UnknownKind, broken_kinds, first_error, kind_sources, kinds

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _arg_type(annotation: Any) -> tuple[Any, list[Any] | None]:
    """(converter, choices) for a pydantic field annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        return type(values[0]), values
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _arg_type(inner[0]) if inner else (str, None)
    if annotation in (int, float, str):
        return annotation, None
    if annotation is bool:
        return lambda s: s.lower() in ("1", "true", "yes", "on"), None
    return str, None


def add_model_options(parser: argparse.ArgumentParser, model: type[BaseModel]) -> None:
    """One option per field, under the field's own name (the registry refused names that would collide)."""
    for name, field in model.model_fields.items():
        conv, choices = _arg_type(field.annotation)
        parser.add_argument(
            _option(name),
            dest=name,
            type=conv,
            choices=choices,
            default=argparse.SUPPRESS,
            help=f"{field.description or name} (default: {field.default})",
        )


def model_from_args(
    kind: str, model: type[BaseModel], args: argparse.Namespace, defaults: dict[str, Any] | None = None
) -> BaseModel:
    """The model from ``defaults`` (team defaults, then a preset) overridden by the options given."""
    values = {k: v for k, v in (defaults or {}).items() if k in model.model_fields}
    values.update({k: getattr(args, k) for k in model.model_fields if hasattr(args, k)})
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise UsageError(str(first_error(kind, exc))) from None


RUN_OPTIONS = RUNNER_OPTIONS
"""Declared beside the Task protocol, so the registry refuses a kind parameter with one of these names."""
LLM_FLAGS = {"llm_base_url": "base_url", "llm_model": "model", "reasoning_effort": "reasoning_effort"}
"""Flags of the ``llm`` proposer and the proposer option each sets (flags beat ``--proposer-option``)."""
DEFAULT_PROCESSES = os.cpu_count() or 2
"""Worker processes of a fleet by default: one per core, workers as threads inside them. One process per
worker was 4-7x slower to converge on 2 cores (interpreter start-up and imports dominate); see the
Service section of BENCHMARKS.md."""


def add_proposer_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--proposer", default="heuristic", help="heuristic | llm | simulated-llm | ...")
    p.add_argument(
        "--proposer-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="proposer setting (e.g. base_url=..., model=..., max_tokens=...); repeatable",
    )
    p.add_argument(
        "--llm-base-url",
        default=None,
        help="OpenAI-compatible endpoint of the llm proposer, e.g. http://127.0.0.1:8000/v1 "
        "(API key from BLOCKOPT_LLM_API_KEY or OPENAI_API_KEY)",
    )
    p.add_argument(
        "--llm-model", default=None, help="model name as the server knows it (default: openai/gpt-oss-120b)"
    )
    p.add_argument(
        "--reasoning-effort",
        default=None,
        choices=["low", "medium", "high"],
        help="GPT-OSS reasoning level (default: low)",
    )


def proposer_options(args: argparse.Namespace, agents: int | None = None) -> dict[str, str]:
    """``--proposer-option`` pairs, then the LLM flags; checked here so bad settings fail before any worker starts."""
    options: dict[str, str] = {}
    for item in args.proposer_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--proposer-option must be KEY=VALUE, got '{item}'")
        options[key] = value
    options.update(
        {key: getattr(args, flag) for flag, key in LLM_FLAGS.items() if getattr(args, flag) is not None}
    )
    if args.proposer == "llm":
        from agents.llm.settings import LLMSettings

        try:
            LLMSettings.from_env({}, **options)  # the key itself is read by each worker, from its environment
        except ValueError as exc:
            raise UsageError(
                f"llm proposer: {str(exc).splitlines()[0]}: {' '.join(str(exc).splitlines()[1:3])}"
            ) from None
    elif args.proposer == "simulated-llm":
        options.pop("base_url", None)  # no server: the latency model stands in for it
        if agents is not None:
            options.setdefault("concurrent_streams", str(agents))  # the team shares one GPU
    elif set(options) & set(LLM_FLAGS.values()) and args.proposer == "heuristic":
        raise UsageError(
            "--llm-base-url, --llm-model and --reasoning-effort need --proposer llm or simulated-llm"
        )
    return options


def add_worker_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--coordinator", required=True, help="base URL, e.g. http://127.0.0.1:8765")
    p.add_argument("--task", required=True, help="task id")
    p.add_argument(
        "--join-token",
        default=None,
        help="the task's join token (prefer BLOCKOPT_JOIN_TOKEN or --join-token-file)",
    )
    p.add_argument("--join-token-file", type=Path, default=None)
    add_proposer_options(p)
    p.add_argument("--name", default="agent")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def build_parser(with_kinds: bool = True) -> argparse.ArgumentParser:
    """The command line; ``with_kinds=False`` leaves out ``run``'s per-kind options, which load every
    installed kind (an agent process needs only its task's)."""
    parser = OneLineParser(prog="blockopt", description="Block-optimization coordinator for agent teams.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = sub.add_parser("run", help="solve one task with a team of agents and write a report")
    kind_parsers = run.add_subparsers(dest="kind", required=True, parser_class=OneLineParser)
    for kind, cls in sorted(kinds().items()) if with_kinds else ():
        kp = kind_parsers.add_parser(kind, help=(cls.__doc__ or kind).strip().splitlines()[0])
        kp.add_argument(
            "--agents",
            type=int,
            default=None,
            help="team size (default: one per block for kinds with a fixed block count, up to "
            f"{MAX_DEFAULT_AGENTS}; else 4)",
        )
        kp.add_argument("--merge", choices=["independent", "checked"], default="checked")
        kp.add_argument(
            "--max-rounds",
            type=int,
            default=None,
            help=f"rounds budget (default: {DEFAULT_MAX_ROUNDS}; none with --time-limit, which ends the run)",
        )
        kp.add_argument("--time-limit", type=float, default=None, help="wall seconds")
        kp.add_argument("--window", type=int, default=3, help="rounds used to predict the envelope")
        kp.add_argument(
            "--selection",
            choices=["lease_order", "ucb1", "alns"],
            default="lease_order",
            help="service path: how the coordinator picks the kind's neighbourhood generators and blocks "
            "(lease_order: no learning)",
        )
        kp.add_argument(
            "--hold",
            action="store_true",
            help="with --selection ucb1|alns: an agent whose lease found nothing waits for the round to "
            "close, and the blocks that did not pay are formed anew after every round",
        )
        kp.add_argument(
            "--stall-seconds",
            type=float,
            default=None,
            help="service path: rounds without a merge stop the run only once none has merged for this many "
            "seconds (held agents make rounds short: a count of rounds alone ends such a run early)",
        )
        kp.add_argument(
            "--stop-gain-per-1k-tokens",
            type=float,
            default=None,
            help="stop as diminishing_returns when the forecast gain per 1,000 tokens falls below this",
        )
        kp.add_argument(
            "--stop-gain-per-agent-second",
            type=float,
            default=None,
            help="stop as diminishing_returns when the forecast gain per agent-second falls below this",
        )
        kp.add_argument(
            "--report", type=Path, default=None, help="write the JSON report here (PNG beside it)"
        )
        kp.add_argument(
            "--target",
            type=float,
            action="append",
            default=None,
            metavar="Q",
            help="objective whose first time the report's anytime section gives (repeatable)",
        )
        kp.add_argument(
            "--plot-x",
            choices=["rounds", "seconds"],
            default="rounds",
            help="x-axis of the convergence picture: rounds, or seconds since the task was created",
        )
        kp.add_argument(
            "--inproc", action="store_true", help="engine only: no HTTP, the task's own proposers"
        )
        kp.add_argument("--quiet", action="store_true", help="no per-round progress lines")
        kp.add_argument(
            "--ui",
            action="store_true",
            help="print the live page's URL and keep serving it after the run until Ctrl-C",
        )
        kp.add_argument(
            "--mode",
            choices=["rounds", "async"],
            default="rounds",
            help="service path: rounds on quorum-or-deadline, or merge on arrival",
        )
        kp.add_argument(
            "--regroup-after",
            choices=["stalled", "arrival"],
            default=None,
            help="service path: regroup the blocks nobody holds after a round that merged nothing (stalled), "
            "or after every arrival (arrival: async mode only; its default there)",
        )
        kp.add_argument("--processes", type=int, default=DEFAULT_PROCESSES, help="agent worker processes")
        kp.add_argument("--lease-ttl", type=float, default=10.0, help="seconds a lease lives without renewal")
        kp.add_argument(
            "--round-deadline",
            type=float,
            default=2.0,
            help="round closes this long after its first proposal",
        )
        kp.add_argument(
            "--store",
            default="memory",
            help="the embedded coordinator's store: memory, or sqlite:///path/state.db to keep the run",
        )
        add_proposer_options(kp)
        if cls.presets:
            kp.add_argument(
                "--preset",
                choices=sorted(cls.presets),
                default=None,
                help="a named parameter set of this kind; options given explicitly override it",
            )
        add_model_options(kp, cls.Params)
        add_model_options(kp, cls.ProposerParams)

    sub.add_parser("kinds", help="list the installed task kinds and the packages they come from")

    comp = sub.add_parser(
        "compare", help="time-to-target speed-ups of run reports (the first is the reference)"
    )
    comp.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json")
    comp.add_argument(
        "--target",
        type=float,
        default=None,
        help="objective Q to reach (default: the first report's final objective)",
    )
    comp.add_argument(
        "--goal",
        type=float,
        default=None,
        metavar="S",
        help="read the reports as samples: each team size's runs against the first report's team size,"
        " whether their speed-up is above S, below it, or undecided (Q then defaults to the upper median"
        " of the reference runs' finals)",
    )
    comp.add_argument(
        "--at",
        type=float,
        nargs="+",
        default=None,
        metavar="SECONDS",
        help="each other team size's pace at these times: the reference runs' time to the objective it had"
        " then, so you see where along the run a team gains its speed-up",
    )
    comp.add_argument("--json", action="store_true", help="print the comparison as JSON")

    serve = sub.add_parser(
        "serve", help="run the coordinator service", allow_abbrev=False
    )  # no --x-token → --x-token-file
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument(
        "--store",
        default="memory",
        help="sqlite:///path/state.db (one node, survives restarts), redis://HOST:PORT/DB shared by "
        "several replicas, or memory (tests and benchmarks: lost on exit)",
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--http",
        default="auto",
        choices=["auto", "h11", "httptools"],
        help="HTTP parser (auto: httptools when installed; BENCHMARKS.md, 'HTTP stack')",
    )
    serve.add_argument(
        "--loop",
        default="auto",
        choices=["auto", "asyncio", "uvloop"],
        help="event loop (auto: uvloop when installed)",
    )
    add_settings_options(serve)  # one flag per ServiceSettings field

    agent = sub.add_parser("agent", help="run one agent worker against a coordinator")
    add_worker_options(agent)

    fleet = sub.add_parser("fleet", help="run N agent workers against a coordinator")
    add_worker_options(fleet)
    fleet.add_argument("--agents", type=int, default=4)
    fleet.add_argument(
        "--processes",
        type=int,
        default=DEFAULT_PROCESSES,
        help="worker processes (workers are threads inside them)",
    )
    fleet.add_argument("--first-index", type=int, default=0, help=argparse.SUPPRESS)
    return parser


MAX_DEFAULT_AGENTS = 16
"""Cap of the default team: one agent per block where the kind fixes the block count."""
DEFAULT_TEAM = 4
"""The default team where the partition follows the team (``Task.team_defaults``)."""


def _check_run_options(args: argparse.Namespace) -> None:
    if args.agents < 1:
        raise UsageError("--agents must be at least 1")
    if args.max_rounds is not None and args.max_rounds < 1:
        raise UsageError("--max-rounds must be at least 1")
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError("--time-limit must be positive")
    if args.window < 1:
        raise UsageError("--window must be at least 1")
    if args.processes < 1:
        raise UsageError("--processes must be at least 1")
    for name in ("stop_gain_per_1k_tokens", "stop_gain_per_agent_second"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive")
    args.proposer_options = proposer_options(args, args.agents)
    if args.inproc and args.store != "memory":
        raise UsageError("--inproc keeps no store; --store needs the service path (drop --inproc)")
    from coordinator.errors import InvalidRequest
    from coordinator.store import store_option

    try:
        args.store_settings = store_option(args.store)
    except InvalidRequest as exc:
        raise UsageError(exc.message) from None
    if args.inproc:
        _check_inproc_options(args)
    if args.regroup_after == "arrival" and args.mode != "async":
        raise UsageError(
            "--regroup-after arrival needs --mode async (rounds mode regroups after an empty round)"
        )


def _check_inproc_options(args: argparse.Namespace) -> None:
    """Options that need the service path."""
    if args.selection != "lease_order" or args.hold or args.stall_seconds is not None or args.regroup_after:
        raise UsageError(
            "--selection, --hold, --stall-seconds and --regroup-after need the service path (drop --inproc)"
        )
    if args.ui:
        raise UsageError("--ui needs the service path (drop --inproc)")
    if args.proposer != "heuristic":
        raise UsageError(
            "--inproc drives the task's own proposers; --proposer needs the service path (drop --inproc)"
        )


def cmd_run(args: argparse.Namespace) -> int:
    from blockopt.runs import execute_run

    cls = kinds()[args.kind]
    preset = cls.presets.get(getattr(args, "preset", None) or "", {})
    if args.agents is None and cls.team_defaults(1, args.mode):
        args.agents = DEFAULT_TEAM  # the partition follows the team
    team = cls.team_defaults(args.agents, args.mode) if args.agents is not None else {}
    defaults = {**team, **preset}
    params = model_from_args(args.kind, cls.Params, args, defaults)
    knobs = model_from_args(args.kind, cls.ProposerParams, args, defaults)
    own = os.environ.get("BLOCKOPT_ADMIN_TOKEN")  # the embedded coordinator of a service run uses it when set
    if not args.inproc and own and (reason := weak_token_reason(own)) is not None:
        raise UsageError(f"BLOCKOPT_ADMIN_TOKEN: {reason}, or unset it (a fresh one is generated)")
    from blockopt.team import team_error, team_line

    try:
        task = cls(params)
    except InvalidParams as exc:  # a parameter the team size set (one block per agent) names the team
        raise UsageError(team_error(exc, team, vars(args), args.agents or 0)) from None
    if args.agents is None:  # one agent per block, so every block proposes each round (a priori precondition)
        args.agents = min(task.n_blocks, MAX_DEFAULT_AGENTS)
    _check_run_options(args)
    if (line := team_line(args.agents, task.n_blocks)) is not None:
        print(f"blockopt: {line}", file=sys.stderr, flush=True)
    if args.inproc:
        report = execute_run(task, knobs, args)
    else:
        from blockopt.runs import execute_service_run

        report = execute_service_run(task, knobs, args)
    return EXIT_CODES[TaskStatus(report.status)]


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn
    from prometheus_client import CollectorRegistry

    from blockopt.service_flags import settings_from_args
    from coordinator.api.embedded import SHUTDOWN_GRACE
    from coordinator.api.main import create_app
    from coordinator.errors import InvalidRequest
    from coordinator.store import make_store, store_option

    setup_logging(args.log_level)
    try:
        settings = settings_from_args(args, store_option(args.store))
    except InvalidRequest as exc:
        raise UsageError(exc.message) from None
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    if settings.admin_token is None:
        raise UsageError("no admin token: set BLOCKOPT_ADMIN_TOKEN or pass --admin-token-file")
    if settings.public_read:
        logging.getLogger("blockopt.serve").warning(
            "--public-read: anyone who can reach this coordinator can read every task's solution, report, "
            "rounds, events and trajectories"
        )
    from blockopt import supervisor

    problem = supervisor.split_problem(settings)
    if problem is not None:
        raise UsageError(problem)
    if supervisor.is_split(settings):  # API and engine processes: blockopt/supervisor.py
        options = supervisor.HttpOptions(args.host, args.port, args.log_level, args.http, args.loop)
        return supervisor.supervise(settings, options)
    try:
        store = make_store(settings)
    except InvalidRequest as exc:
        raise UsageError(exc.message) from None
    app = create_app(settings, store, CollectorRegistry())
    from coordinator.runtime import heap

    heap.settle()
    # uvicorn shuts down gracefully on SIGTERM, then re-raises it to the handler it found: make that a no-op
    # so a clean shutdown exits 0.
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    logging.getLogger("blockopt.ui").info(
        "web UI at http://%s:%d/ui/ (enter a token the API accepts once)", args.host, args.port
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=False,
        http=args.http,
        loop=args.loop,
        timeout_graceful_shutdown=SHUTDOWN_GRACE,  # an open event stream would hold SIGTERM forever
    )
    return 0


def _worker_config(args: argparse.Namespace) -> Any:
    from agents.worker import WorkerConfig

    token = args.join_token
    if token is None and args.join_token_file is not None:
        token = args.join_token_file.read_text().strip()
    token = token or os.environ.get("BLOCKOPT_JOIN_TOKEN", "").strip()
    if not token:
        raise UsageError("no join token: pass --join-token, --join-token-file or set BLOCKOPT_JOIN_TOKEN")
    options = proposer_options(args, getattr(args, "agents", None))  # children inherit the parent's options
    return WorkerConfig(
        coordinator=args.coordinator,
        task=args.task,
        join_token=token,
        proposer=args.proposer,
        proposer_options=options,
        name=args.name,
        seed=args.seed,
    )


def _stop_on_signals(on_signal: Any = None) -> threading.Event:
    stop = threading.Event()

    def handle(signum: int, frame: object) -> None:
        stop.set()
        if on_signal is not None:
            on_signal()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return stop


def cmd_agent(args: argparse.Namespace) -> int:
    from agents.worker import Worker, interrupt

    setup_logging(args.log_level)
    worker = Worker(_worker_config(args))
    from coordinator.runtime import heap

    heap.settle()  # an agent process's own heap (docs/notes/2026-12-06-heap-and-early-answers.md)
    _stop_on_signals(lambda: interrupt(worker))
    stats = worker.run()
    return 0 if stats.ended in ("task_finished", "budget_exceeded", "stopped") else 1


def cmd_fleet(args: argparse.Namespace) -> int:
    from agents.fleet import run_fleet

    if args.agents < 1 or args.processes < 1:
        raise UsageError("--agents and --processes must be at least 1")
    setup_logging(args.log_level)
    from coordinator.runtime import heap

    heap.settle()  # the fleet's process (with several processes, each child settles its own)
    return run_fleet(
        _worker_config(args),
        args.agents,
        args.processes,
        args.first_index,
        _stop_on_signals(),
        args.log_level,
    )


def cmd_compare(args: argparse.Namespace) -> int:
    from blockopt.compare import CompareError, compare, table

    if args.goal is not None and not args.goal > 0:
        raise UsageError(f"--goal must be a positive speed-up, not {args.goal:g}")
    if args.at is not None and not all(t > 0 for t in args.at):
        raise UsageError(f"--at takes positive seconds, not {' '.join(f'{t:g}' for t in args.at)}")
    try:
        result = compare(args.reports, args.target, args.goal, args.at)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        for row in result["runs"]:  # JSON has no infinity: a run that started at the target has T(Q) = 0
            if row["speed_up"] is not None and row["speed_up"] == float("inf"):
                row["speed_up"] = None
        print_json(result)
    else:
        print("\n".join(table(result)))
    return 0


def cmd_kinds() -> int:
    """Per installed kind: name, package and version, entry point, then the capabilities it offers
    (``tasks/capabilities.py``); a broken one with its reason."""
    for source in kind_sources():
        where = f"{source.package} {source.version}  ({source.target})"
        if source.error is None:
            cls = kinds()[source.kind]
            doc = (cls.__doc__ or "").strip().splitlines()
            print(f"{source.kind:<12} {where}  {doc[0] if doc else ''}".rstrip())
            offered = sorted(c.__name__ for c in capabilities.capabilities_of(cls))
            print(f"{'':<12} offers: {', '.join(offered) or 'the core only'}")
        else:
            print(f"{source.kind:<12} {where}  BROKEN: {source.error}")
    return 0


def warn_broken_kinds() -> None:
    for source in broken_kinds():
        sys.stderr.write(
            f"blockopt: warning: task kind '{source.kind}' from package {source.package} "
            f"not loaded: {source.error}\n"
        )


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(with_kinds=command == "run")
    args = parser.parse_args(words)
    if args.command in ("run", "serve"):  # an agent's kind, if broken, is named when it joins
        warn_broken_kinds()
    try:
        if args.command == "kinds":
            return cmd_kinds()
        if args.command == "compare":
            return cmd_compare(args)
        if args.command == "run":
            return cmd_run(args)
        if args.command == "serve":
            return cmd_serve(args)
        if args.command == "agent":
            return cmd_agent(args)
        if args.command == "fleet":
            return cmd_fleet(args)
    except (UsageError, InvalidParams, UnknownKind) as exc:
        sys.stderr.write(f"blockopt: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("blockopt: interrupted\n")
        return 130
    parser.error(f"unknown command {args.command}")


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    raise SystemExit(main())
