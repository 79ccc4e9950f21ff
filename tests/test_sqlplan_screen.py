"""sqlplan screening: agents search on a smaller TPC-H database; what is merged is measured exactly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tasks.sqlplan.task import SqlPlanParams, SqlPlanTask
from tasks.sqlplan.workload import QUERIES_DIR, ensure_tpch_db


@pytest.fixture(scope="module")
def queries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("queries")
    for q in ("q06", "q14", "q17"):
        shutil.copy(QUERIES_DIR / f"{q}.sql", d / f"{q}.sql")
    return d


@pytest.mark.slow  # ~8 s of CPU once the SF 0.02 database is cached (first use generates it)
def test_screened_proposal_is_scored_exactly_on_the_full_database(queries: Path) -> None:
    ensure_tpch_db(0.02)
    task = SqlPlanTask(
        SqlPlanParams(scale=0.02, screen_scale=0.01, queries=str(queries), blocks=1, baselines=False)
    )
    proposer = task.make_proposer(task.ProposerParams(proposal_seconds=3.0, use_expert=False))
    assert proposer.screening and proposer.ev is not task.ev
    assert proposer.ev.workload.db_path != task.workload.db_path
    s0 = task.initial_state()
    draft = proposer.propose({"data": task.contract(s0, 0), "block": 0})
    assert draft is not None and draft.predicted_improvement > 0
    change = task.validate(0, draft.value)
    exact = task.objective(s0) - task.evaluate_change(s0, {0: change})
    assert exact > 0  # the screen's pick improves the full database too, every result equivalent
    s1 = task.apply(s0, {0: change})
    assert task.feasible(s1)
    assert task.full_objective(s1) == task.objective(s1)  # and the committed cost is the exact one
    # the screen's costs are its own database's, not the full one's
    assert sum(proposer.ev.default_cost.values()) < task.default_total


def test_screen_scale_must_be_below_the_scale() -> None:
    with pytest.raises(ValueError, match="screen_scale"):
        SqlPlanTask(SqlPlanParams(scale=0.01, screen_scale=0.01, baselines=False))
