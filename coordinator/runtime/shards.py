"""Which round runner serves which task: rendezvous hashing over the live runners.

Every process that runs rounds beats in the store (``Store.engine_heartbeat``) and reads back the live
list. Each task goes to the runner with the highest hash of (runner, task), so every runner computes the
same answer from the same list without talking to the others, and when a runner joins or leaves only
the tasks it gains or loses move. The round lock stays the guard: while two runners' lists differ (for at
most one beat) both may look at a task, and the lock lets one of them run its round.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence


def _weight(runner: str, task_id: str) -> int:
    return zlib.crc32(f"{runner}\x00{task_id}".encode())


def owner_of(task_id: str, runners: Sequence[str]) -> str:
    """The runner that serves ``task_id`` (``runners``: the live list, not empty)."""
    return max(runners, key=lambda runner: (_weight(runner, task_id), runner))
