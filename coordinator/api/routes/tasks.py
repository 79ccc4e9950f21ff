"""``/v1/tasks``: create (admin), list, read one, stop (admin), its rounds, report and solution."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from coordinator.api.deps import ADMIN, READ, ServiceDep, StoreDep
from coordinator.api.examples import REPORT_EXAMPLE
from coordinator.reports import books
from coordinator.reports.ledger import Report
from coordinator.runtime.wire import CreateTask, RoundsView, SolutionView, TaskCreated, TaskList, TaskView

router = APIRouter(prefix="/v1/tasks", tags=["tasks"])


@router.post(
    "", status_code=201, response_model=TaskCreated, dependencies=ADMIN, summary="Create a task (admin)"
)
async def post_task(body: CreateTask, service: ServiceDep) -> TaskCreated:
    """Answers within ``prepare_wait`` seconds: ``status`` says whether the task already runs or its kind is
    still preparing it (reference, first plan) in the background."""
    return await service.begin(body)


@router.get("", response_model=TaskList, dependencies=READ, summary="List tasks (admin)")
async def list_tasks(service: ServiceDep) -> TaskList:
    return TaskList(tasks=await service.views())


@router.get("/{task_id}", response_model=TaskView, dependencies=READ, summary="A task's status")
async def get_task(task_id: str, service: ServiceDep) -> TaskView:
    return await service.view(task_id)


@router.post("/{task_id}/stop", response_model=TaskView, dependencies=ADMIN, summary="Stop a task (admin)")
async def stop_task(task_id: str, service: ServiceDep) -> TaskView:
    return await service.stop(task_id)


@router.get(
    "/{task_id}/rounds",
    response_model=RoundsView,
    dependencies=READ,
    summary="Per-round history with the bound's constants",
)
async def get_rounds(task_id: str, store: StoreDep, since: Annotated[int, Query(ge=0)] = 0) -> RoundsView:
    await store.get_task(task_id)
    return RoundsView(task=task_id, rounds=[books.history_row(e) for e in await store.rounds(task_id, since)])


@router.get(
    "/{task_id}/report",
    response_model=Report,
    dependencies=READ,
    summary="The run report (docs/architecture.md §10)",
    responses={200: {"content": {"application/json": {"example": REPORT_EXAMPLE}}}},
)
async def get_report(task_id: str, service: ServiceDep) -> Report:
    return await service.report(task_id)


@router.get(
    "/{task_id}/solution", response_model=SolutionView, dependencies=READ, summary="The current solution"
)
async def get_solution(task_id: str, service: ServiceDep) -> SolutionView:
    return SolutionView(**await service.solution(task_id))
