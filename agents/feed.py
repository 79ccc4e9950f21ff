"""The worker's ``HeadFeed``: ``GET /v1/tasks/{id}/changes?since=V`` for the proposer's search under way.

The search never waits on the coordinator: an ask takes the reply that has arrived since the last ask (if
any) and sends the next request, which one background thread carries. A search blocked on each request
would queue behind the coordinator's other work every few milliseconds.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from agents.http import Api, ApiError, GaveUp

log = logging.getLogger("blockopt.agent")


class HttpHeadFeed:
    """What merged since ``version``, asked of the coordinator in the background (``requests``: the worker's
    one thread for it). Once the coordinator says it cannot tell (a version it no longer keeps, a kind
    without ``head_changes``) or does not answer, the feed stays quiet for this lease: the search goes on
    from what it has and its answer is rebased as before."""

    def __init__(self, api: Api, task_path: str, version: int, requests: ThreadPoolExecutor) -> None:
        self.api, self.path, self.version, self.requests = api, f"{task_path}/changes", version, requests
        self.quiet = False
        self._pending: Future[dict[str, Any]] | None = None

    def __call__(self) -> Any | None:
        changes = None
        pending = self._pending
        if pending is not None and pending.done():
            self._pending = None
            try:
                reply = pending.result()
            except (ApiError, GaveUp) as exc:
                log.debug("head feed quiet for this lease: %s", exc)
                self.quiet = True
                return None
            self.version = int(reply["version"])
            changes = reply.get("changes")
        if self._pending is None and not self.quiet:
            self._pending = self.requests.submit(self._get, self.version)
        return changes

    def _get(self, since: int) -> dict[str, Any]:
        return dict(self.api.call("GET", self.path, params={"since": since}, retry=False).json())
