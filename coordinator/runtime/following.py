"""``GET /v1/tasks/{id}/changes?since=V``: what merged since the head an agent's search is on.

Agents that search the whole state at once (overlapping whole-state leases) each find improvements on an
older head the longer they search; an answer whose elements a merge changed meanwhile is mostly refused. A
search that asks for the changes every few milliseconds stays on the head as it moves and answers on it.
The reply is the kind's ``head_changes`` between two heads this process holds (``BuiltTask.recent``, kept
from a task's first ask on: an ask for a head from before then is 409, and the search goes on without): no
store read when the version did not move, and one head load when it did, as for a lease.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator import errors
from coordinator.runtime.budgets import running
from coordinator.runtime.cache import TaskCache
from coordinator.runtime.context import ServiceContext
from coordinator.runtime.steps import StepRunner
from coordinator.runtime.wire import HeadChangesView
from coordinator.store.base import AgentRecord
from tasks import capabilities


@dataclass(eq=False)
class HeadFeeds:
    """Answers an agent's "what changed since version V" from the heads this process keeps."""

    ctx: ServiceContext
    cache: TaskCache
    steps: StepRunner

    async def changes(self, task_id: str, agent: AgentRecord, since: int) -> HeadChangesView:
        spec = await self.cache.spec(task_id)
        runtime, version = await self.cache.runtime_and_version(task_id)
        running(task_id, runtime)
        if since > version:
            raise errors.NoSuchVersion(
                f"version {since} is newer than the head's ({version})", since=since, version=version
            )
        built = self.cache.built(task_id)
        if built is None or built.snapshot.version != version:
            built = await self.cache.build(spec, await self.ctx.store.get_head(task_id))
        built.kept = built.KEPT  # from the first ask on, this process keeps the heads to tell changes from
        if since == version:
            return HeadChangesView(version=version, since=since)
        if not capabilities.offers(built.task, capabilities.HeadChanges):
            raise errors.NotOffered(f"kind {spec.kind} does not tell a head's changes; lease again instead")
        before, after = built.recent.get(since), built.snapshot
        if before is None:
            raise errors.VersionGone(
                f"version {since} is older than the {len(built.recent)} heads this coordinator keeps;"
                " lease again",
                since=since,
                version=after.version,
            )
        changes = await self.steps.kind_call(
            built, "head_changes", capabilities.head_changes, built.task, before.state, after.state
        )
        return HeadChangesView(version=after.version, since=since, changes=changes)
