"""What runs print about the web UI, and the wait that keeps it served after a `--ui` run ends."""

from __future__ import annotations

import signal
import sys
import threading


def live_view_hint(base_url: str, task_id: str, token: str | None, keep_open: bool) -> str:
    """One line: the page's URL (never with the token in it) and which token to paste into the page once
    (``token`` None: the user's own BLOCKOPT_ADMIN_TOKEN, which is not echoed)."""
    after = "served until Ctrl-C after the run" if keep_open else "add --ui to keep it open after the run"
    which = "your BLOCKOPT_ADMIN_TOKEN" if token is None else f"the token {token}"
    return f"live view: {base_url}/ui/#/tasks/{task_id}  (paste {which} into the page once; {after})"


def serve_until_interrupted(url: str) -> None:
    # A native library loaded during the run can leave SIGINT at the OS default (the process would die with
    # no cleanup); installing Python's handler again makes Ctrl-C a KeyboardInterrupt here.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print(f"the run has ended; still serving {url} — press Ctrl-C to stop", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("", file=sys.stderr)
