"""Logging set-up for every process the command line starts (the CLI's own and the supervisor's children)."""

from __future__ import annotations

import logging
import sys


def setup_logging(level: str) -> None:
    """One stderr format for all processes; httpx's per-request lines only at DEBUG."""
    logging.basicConfig(
        level=getattr(logging, level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if level.upper() != "DEBUG":
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress
