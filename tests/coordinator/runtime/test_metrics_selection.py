"""/metrics exports each task's adaptive-selection weights; a scrape reads only the rounds since the last."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from blockopt.testing.stores import T0, head, record, spec
from coordinator.engine import adaptive
from coordinator.engine import forecast as fc
from coordinator.runtime.metrics import ServiceMetrics
from coordinator.store import MemoryStore
from coordinator.store.base import Commit, RoundEntry, TaskRuntime

ARMS = ["partition", "random", "regroup"]


class CountingStore(MemoryStore):
    """Records how many round entries each ``rounds`` call returned."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[int] = []

    async def rounds(self, task_id: str, since: int = 0) -> list[RoundEntry]:
        got = await super().rounds(task_id, since)
        self.read.append(len(got))
        return got


async def _commit_rounds(store: MemoryStore, first: int, count: int) -> None:
    for i in range(first, first + count):
        fence = await store.acquire_round_lock("t-1", "r", 5.0, T0 + i)
        assert fence is not None
        row = adaptive.row_of([(i % 3, 1.0, 0)], {i % 3: 0.1 * (i + 1)}, (ARMS[i % 3], 0.5))
        rec = record(i, i + 1).model_copy(update={"objective": -0.1 * (i + 1), "selection": row})
        await store.commit(
            "t-1",
            Commit(
                expected_version=i,
                fence=fence,
                runtime=TaskRuntime(round=i + 1),
                head=head(i + 1),
                round=RoundEntry(record=rec, closed_at=T0 + i),
            ),
        )
        await store.release_round_lock("t-1", fence)


def _weights(metrics: ServiceMetrics) -> dict[str, tuple[float | None, float]]:
    (sample,) = metrics.state.snapshot.tasks
    return sample.neighbourhoods


@pytest.mark.anyio
async def test_a_scrape_replays_only_the_new_rounds_and_agrees_with_a_full_replay() -> None:
    store = CountingStore()
    task = spec().model_copy(
        update={"selection": adaptive.SelectionSettings(policy="ucb1"), "neighbourhoods": ARMS}
    )
    await store.create_task(task, head())
    metrics = ServiceMetrics(CollectorRegistry())
    first = 2 * fc.DEFAULT_WINDOW + 10  # more than the forecast's recent window reads
    await _commit_rounds(store, 0, first)
    await metrics.refresh(store, T0 + 100)
    await _commit_rounds(store, first, 2)
    store.read.clear()
    await metrics.refresh(store, T0 + 200)

    assert 2 in store.read and first + 2 not in store.read  # the replay read the 2 new rounds, not all
    full = adaptive.bandit_of(task.selection, ARMS)
    assert full is not None
    entries = await MemoryStore.rounds(store, "t-1")
    view = full.replay(task.initial_objective, [e.record for e in entries]).view()
    assert _weights(metrics) == {g: (v["weight"], v["size"]) for g, v in view["generators"].items()}
