"""The worker's ``HeadFeed``: ``GET /v1/tasks/{id}/changes?since=V`` for the proposer's search under way."""

from __future__ import annotations

import logging
from typing import Any

from agents.http import Api, ApiError, GaveUp

log = logging.getLogger("blockopt.agent")


class HttpHeadFeed:
    """What merged since ``version``, asked of the coordinator; once it says it cannot tell (a version it no
    longer keeps, a kind without ``head_changes``) or does not answer, the feed stays quiet for this lease:
    the search goes on from what it has and its answer is rebased as before."""

    def __init__(self, api: Api, task_path: str, version: int) -> None:
        self.api, self.path, self.version = api, f"{task_path}/changes", version
        self.quiet = False

    def __call__(self) -> Any | None:
        if self.quiet:
            return None
        try:
            reply = self.api.call("GET", self.path, params={"since": self.version}, retry=False).json()
        except (ApiError, GaveUp) as exc:
            log.debug("head feed quiet for this lease: %s", exc)
            self.quiet = True
            return None
        self.version = int(reply["version"])
        return reply.get("changes")
