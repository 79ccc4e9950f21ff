"""The ``blockopt`` command line: the one place that wires the coordinator and the agents together.

Each task kind's options are generated from its ``Params`` and ``ProposerParams``
models, so a new kind gets ``blockopt run KIND --its-options`` for free.
Bad input prints one line and exits with code 2.
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

from tasks.registry import InvalidParams, UnknownKind, first_error, kinds

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


def add_model_options(parser: argparse.ArgumentParser, model: type[BaseModel], taken: set[str]) -> None:
    for name, field in model.model_fields.items():
        if name in taken:
            continue
        taken.add(name)
        conv, choices = _arg_type(field.annotation)
        parser.add_argument(
            _option(name), dest=name, type=conv, choices=choices, default=argparse.SUPPRESS,
            help=f"{field.description or name} (default: {field.default})",
        )


def model_from_args(kind: str, model: type[BaseModel], args: argparse.Namespace) -> BaseModel:
    values = {k: getattr(args, k) for k in model.model_fields if hasattr(args, k)}
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise UsageError(str(first_error(kind, exc))) from None


RUN_OPTIONS = {"agents", "merge", "max_rounds", "time_limit", "report", "inproc", "window", "quiet",
               "mode", "processes", "round_deadline", "lease_ttl", "proposer", "proposer_option", "llm_base_url",
               "llm_model", "reasoning_effort"}
LLM_FLAGS = {"llm_base_url": "base_url", "llm_model": "model", "reasoning_effort": "reasoning_effort"}
"""Flags of the ``llm`` proposer and the proposer option each sets (flags beat ``--proposer-option``)."""
DEFAULT_PROCESSES = os.cpu_count() or 2
"""Worker processes of a fleet by default: one per core, workers as threads inside them. One process per
worker was 4-7x slower to converge on 2 cores (interpreter start-up and imports dominate); see the
Service section of BENCHMARKS.md."""


def add_service_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lease-ttl", type=float, default=10.0, help="seconds a lease lives without renewal")
    p.add_argument("--round-deadline", type=float, default=2.0,
                   help="seconds after a round's first proposal at which it closes without quorum")
    p.add_argument("--quorum", type=float, default=1.0, help="fraction of leased blocks that closes a round")


def add_proposer_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--proposer", default="heuristic", help="heuristic | llm | simulated-llm | ...")
    p.add_argument("--proposer-option", action="append", default=[], metavar="KEY=VALUE",
                   help="proposer setting (e.g. base_url=..., model=..., max_tokens=...); repeatable")
    p.add_argument("--llm-base-url", default=None,
                   help="OpenAI-compatible endpoint of the llm proposer, e.g. http://127.0.0.1:8000/v1 "
                        "(API key from BLOCKOPT_LLM_API_KEY or OPENAI_API_KEY)")
    p.add_argument("--llm-model", default=None, help="model name as the server knows it (default: openai/gpt-oss-120b)")
    p.add_argument("--reasoning-effort", default=None, choices=["low", "medium", "high"],
                   help="GPT-OSS reasoning level (default: low)")


def proposer_options(args: argparse.Namespace, agents: int | None = None) -> dict[str, str]:
    """``--proposer-option`` pairs, then the LLM flags; checked here so bad settings fail before any worker starts."""
    options: dict[str, str] = {}
    for item in args.proposer_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--proposer-option must be KEY=VALUE, got '{item}'")
        options[key] = value
    options.update({key: getattr(args, flag) for flag, key in LLM_FLAGS.items() if getattr(args, flag) is not None})
    if args.proposer == "llm":
        from agents.llm.settings import LLMSettings

        try:
            LLMSettings.from_env({}, **options)  # the key itself is read by each worker, from its environment
        except ValueError as exc:
            raise UsageError(f"llm proposer: {str(exc).splitlines()[0]}: {' '.join(str(exc).splitlines()[1:3])}") from None
    elif args.proposer == "simulated-llm":
        options.pop("base_url", None)  # no server: the latency model stands in for it
        if agents is not None:
            options.setdefault("concurrent_streams", str(agents))  # the team shares one GPU
    elif set(options) & set(LLM_FLAGS.values()) and args.proposer == "heuristic":
        raise UsageError("--llm-base-url, --llm-model and --reasoning-effort need --proposer llm or simulated-llm")
    return options


def add_worker_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--coordinator", required=True, help="base URL, e.g. http://127.0.0.1:8765")
    p.add_argument("--task", required=True, help="task id")
    p.add_argument("--join-token", default=None,
                   help="the task's join token (prefer BLOCKOPT_JOIN_TOKEN or --join-token-file)")
    p.add_argument("--join-token-file", type=Path, default=None)
    add_proposer_options(p)
    p.add_argument("--name", default="agent")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="blockopt", description="Block-optimization coordinator for agent teams.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = sub.add_parser("run", help="solve one task with a team of agents and write a report")
    kind_parsers = run.add_subparsers(dest="kind", required=True, parser_class=OneLineParser)
    for kind, cls in sorted(kinds().items()):
        kp = kind_parsers.add_parser(kind, help=(cls.__doc__ or kind).strip().splitlines()[0])
        kp.add_argument("--agents", type=int, default=4, help="team size")
        kp.add_argument("--merge", choices=["independent", "checked"], default="checked")
        kp.add_argument("--max-rounds", type=int, default=500)
        kp.add_argument("--time-limit", type=float, default=None, help="wall seconds")
        kp.add_argument("--window", type=int, default=3, help="rounds used to predict the envelope")
        kp.add_argument("--report", type=Path, default=None, help="write the JSON report here (PNG beside it)")
        kp.add_argument("--inproc", action="store_true", help="engine only: no HTTP, the task's own proposers")
        kp.add_argument("--quiet", action="store_true", help="no per-round progress lines")
        kp.add_argument("--mode", choices=["rounds", "async"], default="rounds",
                        help="service path: rounds on quorum-or-deadline, or merge on arrival")
        kp.add_argument("--processes", type=int, default=DEFAULT_PROCESSES, help="agent worker processes")
        kp.add_argument("--lease-ttl", type=float, default=10.0, help="seconds a lease lives without renewal")
        kp.add_argument("--round-deadline", type=float, default=2.0, help="round closes this long after its first proposal")
        add_proposer_options(kp)
        taken = set(RUN_OPTIONS)
        add_model_options(kp, cls.Params, taken)
        add_model_options(kp, cls.ProposerParams, taken)

    serve = sub.add_parser("serve", help="run the coordinator service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--store", default="memory",
                       help="memory (one process), or redis://HOST:PORT/DB shared by several replicas")
    serve.add_argument("--redis-prefix", default="blockopt:", help="prefix of every Redis key of this deployment")
    serve.add_argument("--round-lock-ttl", type=float, default=5.0,
                       help="seconds a replica's round lock lives unrenewed (renewed while a round runs); "
                            "the failover wait when its holder dies")
    serve.add_argument("--admin-token-file", type=Path, default=None,
                       help="file holding the admin token (else BLOCKOPT_ADMIN_TOKEN)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--rate-per-agent", type=float, default=50.0, help="sustained requests/s per agent")
    serve.add_argument("--max-body-bytes", type=int, default=1 << 20, help="larger request bodies get 413")
    serve.add_argument("--http", default="auto", choices=["auto", "h11", "httptools"],
                       help="HTTP parser (auto: httptools when installed; BENCHMARKS.md, 'HTTP stack')")
    serve.add_argument("--loop", default="auto", choices=["auto", "asyncio", "uvloop"],
                       help="event loop (auto: uvloop when installed)")
    add_service_options(serve)

    agent = sub.add_parser("agent", help="run one agent worker against a coordinator")
    add_worker_options(agent)

    fleet = sub.add_parser("fleet", help="run N agent workers against a coordinator")
    add_worker_options(fleet)
    fleet.add_argument("--agents", type=int, default=4)
    fleet.add_argument("--processes", type=int, default=DEFAULT_PROCESSES,
                       help="worker processes (workers are threads inside them)")
    fleet.add_argument("--first-index", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def _check_run_options(args: argparse.Namespace) -> None:
    if args.agents < 1:
        raise UsageError("--agents must be at least 1")
    if args.max_rounds < 1:
        raise UsageError("--max-rounds must be at least 1")
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError("--time-limit must be positive")
    if args.window < 1:
        raise UsageError("--window must be at least 1")
    if args.processes < 1:
        raise UsageError("--processes must be at least 1")
    args.proposer_options = proposer_options(args, args.agents)
    if args.inproc and args.proposer != "heuristic":
        raise UsageError("--inproc drives the task's own proposers; --proposer needs the service path (drop --inproc)")


def cmd_run(args: argparse.Namespace) -> int:
    from blockopt.runs import execute_run

    _check_run_options(args)
    cls = kinds()[args.kind]
    blocks = cls.Params.model_fields.get("blocks")
    if blocks is not None and blocks.default is None and not hasattr(args, "blocks"):
        args.blocks = args.agents  # kinds whose partition defaults to "one block per agent"
    params = model_from_args(args.kind, cls.Params, args)
    knobs = model_from_args(args.kind, cls.ProposerParams, args)
    if args.inproc:
        report = execute_run(cls(params), knobs, args)
    else:
        from blockopt.runs import execute_service_run

        report = execute_service_run(cls(params), knobs, args)
    return 0 if report.status in ("converged", "budget_exhausted") else 1


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if level.upper() != "DEBUG":
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn
    from prometheus_client import CollectorRegistry

    from coordinator.app import create_app
    from coordinator.settings import from_env
    from coordinator.errors import InvalidRequest
    from coordinator.store import make_store, store_option

    _setup_logging(args.log_level)
    try:
        settings = from_env(admin_token_file=args.admin_token_file, **store_option(args.store),
                            redis_prefix=args.redis_prefix, round_lock_ttl=args.round_lock_ttl,
                            lease_ttl=args.lease_ttl, round_deadline=args.round_deadline, quorum=args.quorum)
    except InvalidRequest as exc:
        raise UsageError(exc.message) from None
    except (OSError, ValueError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    if settings.admin_token is None:
        raise UsageError("no admin token: set BLOCKOPT_ADMIN_TOKEN or pass --admin-token-file")
    app = create_app(settings, make_store(settings), CollectorRegistry())
    # uvicorn shuts down gracefully on SIGTERM, then re-raises it to the handler it found: make that a no-op
    # so a clean shutdown exits 0.
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                http=args.http, loop=args.loop)
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
    return WorkerConfig(coordinator=args.coordinator, task=args.task, join_token=token, proposer=args.proposer,
                        proposer_options=options, name=args.name, seed=args.seed)


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

    _setup_logging(args.log_level)
    worker = Worker(_worker_config(args))
    _stop_on_signals(lambda: interrupt(worker))
    stats = worker.run()
    return 0 if stats.ended in ("task_finished", "budget_exceeded", "stopped") else 1


def cmd_fleet(args: argparse.Namespace) -> int:
    from agents.fleet import run_fleet

    if args.agents < 1 or args.processes < 1:
        raise UsageError("--agents and --processes must be at least 1")
    _setup_logging(args.log_level)
    return run_fleet(_worker_config(args), args.agents, args.processes, args.first_index,
                     _stop_on_signals(), args.log_level)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
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
