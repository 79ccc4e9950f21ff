"""The benchmark scripts' command-line conventions: bad input ends the command with one line on stderr and
exit code 2, before any run; raw results are written as indented JSON, their folder made on the way."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """argparse with the scripts' rule for bad input (a bad option or value, a missing argument): one line
    on stderr and exit code 2, where argparse prints its usage first. Subcommands' parsers inherit it."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, message)


def fail(prog: str, message: str) -> NoReturn:
    """One line on stderr, ``prog: message``, and exit code 2."""
    print(f"{prog}: {message}", file=sys.stderr)
    raise SystemExit(2)


def instances(items: Sequence[str], prog: str) -> list[tuple[str, str]]:
    """``MAP:K`` arguments as (map, k); anything else ends the command with one line and exit code 2."""
    bad = [item for item in items if item.count(":") != 1 or not item.partition(":")[2].isdigit()]
    if bad:
        fail(prog, f"--only wants MAP:K (K robots), got {bad[0]!r}")
    return [(m, k) for m, _, k in (item.partition(":") for item in items)]


def write_json(path: str | Path, data: Any) -> Path:
    """``data`` as indented JSON at ``path`` (its folder made if missing); the path back."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    return out
