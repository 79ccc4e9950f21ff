"""``blockopt serve`` flags generated from ``ServiceSettings``: each setting is defined once, in the model.

As arq maps its worker settings onto its command line, every field of
``ServiceSettings`` becomes a flag named after it (``rate_per_agent`` →
``--rate-per-agent``), typed, with the field's description and default as its
help. Flags are suppressed when absent, so the model's default is the only
default. Secrets are never flags: a ``SecretStr`` field ``x_token`` becomes
``--x-token-file PATH`` with ``BLOCKOPT_X_TOKEN`` as fallback. ``--store``
takes a URL that sets ``store`` and ``redis_url`` together.
"""

from __future__ import annotations

import argparse
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError

from coordinator.settings import SECRET_VARIABLES, ServiceSettings, from_env

STORE_FIELDS = {"store", "redis_url", "sqlite_path"}
"""Set through ``--store URL`` (one flag, two fields)."""


def _strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return inner[0] if len(inner) == 1 else annotation
    return annotation


def flag_of(name: str) -> str:
    """The flag of a settings field (a field may name its own, e.g. ``data_dirs`` → ``--data-dir``)."""
    extra = ServiceSettings.model_fields[name].json_schema_extra
    custom = extra.get("flag") if isinstance(extra, dict) else None
    if custom:
        return f"--{custom}"
    suffix = "-file" if _strip_optional(ServiceSettings.model_fields[name].annotation) is SecretStr else ""
    return "--" + name.replace("_", "-") + suffix


def add_settings_options(parser: argparse.ArgumentParser) -> None:
    """One flag per ``ServiceSettings`` field (``--store`` aside)."""
    for name, field in ServiceSettings.model_fields.items():
        if name in STORE_FIELDS:
            continue
        annotation = _strip_optional(field.annotation)
        flag, text = flag_of(name), field.description or name
        common: dict[str, Any] = {"dest": f"setting_{name}", "default": argparse.SUPPRESS}
        if annotation is SecretStr:
            parser.add_argument(
                flag,
                type=Path,
                metavar="FILE",
                **common,
                help=f"file holding the {text} (else ${SECRET_VARIABLES[name]})",
            )
        elif annotation is bool:
            parser.add_argument(flag, action="store_true", **common, help=text)
        elif typing.get_origin(annotation) is tuple:
            item = typing.get_args(annotation)[0]
            parser.add_argument(
                flag,
                action="append",
                type=item,
                metavar="DIR" if item is Path else "NAME",
                **common,
                help=f"{text} (repeatable)",
            )
        elif typing.get_origin(annotation) is typing.Literal:
            choices = list(typing.get_args(annotation))
            parser.add_argument(flag, choices=choices, **common, help=f"{text} (default: {field.default})")
        else:
            parser.add_argument(
                flag,
                type=annotation,
                metavar=annotation.__name__.upper(),
                **common,
                help=f"{text} (default: {field.default})",
            )


def settings_from_args(
    args: argparse.Namespace, store: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> ServiceSettings:
    """The settings the parsed flags describe (ValueError with one line when they do not validate)."""
    given = {
        name[len("setting_") :]: value for name, value in vars(args).items() if name.startswith("setting_")
    }
    secret_files = {name: given.pop(name, None) for name in SECRET_VARIABLES}
    given = {name: tuple(value) if isinstance(value, list) else value for name, value in given.items()}
    try:
        return from_env(
            os.environ if environ is None else environ, secret_files=secret_files, **store, **given
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        flag = flag_of(where) if where in ServiceSettings.model_fields else None
        raise ValueError(f"{flag}: {message}" if flag else message) from None
