"""The ``blockopt`` command line: the one place that wires the coordinator and the agents together.

Each task kind's options are generated from its ``Params`` and ``ProposerParams``
models, so a new kind gets ``blockopt run KIND --its-options`` for free.
Bad input prints one line and exits with code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
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


RUN_OPTIONS = {"agents", "merge", "max_rounds", "time_limit", "report", "inproc", "window", "quiet"}


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
        taken = set(RUN_OPTIONS)
        add_model_options(kp, cls.Params, taken)
        add_model_options(kp, cls.ProposerParams, taken)
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


def cmd_run(args: argparse.Namespace) -> int:
    from blockopt.runs import execute_run

    _check_run_options(args)
    cls = kinds()[args.kind]
    blocks = cls.Params.model_fields.get("blocks")
    if blocks is not None and blocks.default is None and not hasattr(args, "blocks"):
        args.blocks = args.agents  # kinds whose partition defaults to "one block per agent"
    params = model_from_args(args.kind, cls.Params, args)
    knobs = model_from_args(args.kind, cls.ProposerParams, args)
    report = execute_run(cls(params), knobs, args)
    return 0 if report.status in ("converged", "budget_exhausted") else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return cmd_run(args)
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
