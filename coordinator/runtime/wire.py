"""Request and response bodies of the HTTP API: pydantic models with an example each (shown at /docs).

Over 350 lines: one flat model per body, each with its example and field descriptions, which is what the
OpenAPI schema shows; split by topic they would only scatter one contract over several files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from coordinator.engine.forecast import Forecast, StopWhen
from coordinator.engine.records import MergePolicy, Usage, Verdict
from coordinator.engine.selection_settings import SelectionSettings
from coordinator.json_integers import WholeNumbers
from coordinator.status import TaskStatus
from coordinator.store.base import Budgets, RegroupAfter, TaskMode

if TYPE_CHECKING:
    from tasks.base import Draft


def _example(example: dict[str, Any], forbid: bool = False, **schema: Any) -> ConfigDict:
    """A model's config: its example and further schema keywords (``schema``: cross-field rules)."""
    cfg = ConfigDict(json_schema_extra={"examples": [example], **schema})
    if forbid:  # a request body: no unknown fields, and no coercion (false is not 0.0, "3" is not 3)
        cfg["extra"] = "forbid"
        cfg["strict"] = True
    return cfg


class ProposerHints(WholeNumbers):
    """Which proposer agents should run and its knobs (the kind's ``ProposerParams``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field("heuristic", max_length=64)
    knobs: dict[str, Any] = Field(default_factory=dict)


class StopSpec(WholeNumbers):
    model_config = ConfigDict(extra="forbid", strict=True)
    relative_gap: float = Field(1e-10, ge=0)
    stall_rounds: int = Field(3, ge=1)
    stall_seconds: float | None = Field(
        None,
        gt=0,
        description="with it, stalled rounds stop a task only once no round has merged for this many "
        "seconds either: rounds whose agents wait for the round to close (selection.hold) are short, and a "
        "count of rounds alone would end such a run after a few seconds",
    )


class CreateTask(WholeNumbers):
    model_config = _example(
        {
            "kind": "my-kind",
            "params": {"blocks": 16, "seed": 0},
            "merge_policy": "checked",
            "mode": "rounds",
            "budgets": {"rounds": 500, "seconds": 600},
            "proposer": {"name": "heuristic", "knobs": {"noise": 0.0}},
        },
        forbid=True,
        # the cross-field rule, in the schema: regroup_after 'arrival' needs mode 'async' (400 otherwise)
        **{
            "if": {"properties": {"regroup_after": {"const": "arrival"}}, "required": ["regroup_after"]},
            "then": {"properties": {"mode": {"const": "async"}}, "required": ["mode"]},
        },
    )
    kind: str = Field(..., max_length=64)
    params: dict[str, Any] = Field(default_factory=dict)
    merge_policy: MergePolicy = "checked"
    mode: TaskMode = "rounds"
    regroup_after: RegroupAfter | None = Field(
        None,
        description="when the blocks nobody holds are regrouped (kinds that regroup): 'stalled' after a "
        "round that merged nothing; 'arrival' (async mode only) after every arrival. Default: 'arrival' in "
        "async mode, else 'stalled'",
    )
    budgets: Budgets = Field(default_factory=Budgets)
    proposer: ProposerHints = Field(default_factory=ProposerHints)
    window: int = Field(3, ge=1, description="rounds used to predict the envelope")
    stop: StopSpec = Field(default_factory=StopSpec)
    stop_when: StopWhen | None = Field(
        None,
        description="stop as diminishing_returns when the forecast gain per "
        "1,000 tokens or per agent-second falls below a threshold",
    )
    selection: SelectionSettings = Field(
        default_factory=SelectionSettings,
        description="adaptive block selection: lease_order (default), ucb1 or alns over the kind's "
        "neighbourhood generators, with adapted neighbourhood sizes (rounds mode)",
    )


class TaskCreated(BaseModel):
    model_config = _example(
        {
            "id": "t-3f2a9c",
            "status": "running",
            "join_token": "<join token: give it to your agents>",
            "read_token": "<read token: lets its holder read this task>",
        }
    )
    id: str
    status: TaskStatus = Field(
        TaskStatus.RUNNING,
        description="'running', or 'preparing' while its kind still builds it (reference, first plan) in the "
        "background: joins and leases are then answered 429 task_preparing with a retry_after, and the "
        "task's view turns 'running' (or 'failed', with the reason) when it is done; 'failed' when the kind "
        "raised within the wait",
    )
    join_token: str
    read_token: str = Field(
        description="reads this task (status, rounds, report, solution, events, "
        "trajectories) and nothing else; shown once"
    )


class TaskView(BaseModel):
    model_config = _example(
        {
            "id": "t-3f2a9c",
            "kind": "my-kind",
            "name": "my-kind-b16-s0",
            "status": "running",
            "reason": None,
            "round": 12,
            "version": 12,
            "objective": -29.05,
            "gap": 0.0088,
            "relative_gap": 3e-4,
            "feasible": True,
            "reference": -29.0588,
            "reference_kind": "optimum",
            "merge_policy": "checked",
            "mode": "rounds",
            "regroup_after": "stalled",
            "blocks": 16,
            "agents": 4,
            "leases": 4,
            "budgets": {"rounds": 500},
            "usage": {"tokens": 0, "calls": 48},
            "created_at": 1764478800.0,
            "finished_at": None,
        }
    )
    id: str
    kind: str
    name: str
    status: TaskStatus
    reason: str | None
    round: int
    version: int
    objective: float | None = None
    """None (with gap, feasible, reference and blocks) while the task is ``preparing``: not known yet."""
    gap: float | None = None
    relative_gap: float | None = None
    feasible: bool | None = None
    reference: float | None = None
    reference_kind: str | None = None
    merge_policy: MergePolicy = "checked"
    mode: TaskMode = "rounds"
    regroup_after: RegroupAfter = "stalled"
    blocks: int | None = None
    agents: int = 0
    leases: int = 0
    """Leases held right now."""
    budgets: Budgets
    usage: dict[str, float]
    created_at: float
    finished_at: float | None
    forecast: Forecast | None = None
    """Limit F̂∞, remaining improvement, ETA to relative gap ε, gain per cost (docs/architecture.md §5)."""
    selection: dict[str, Any] | None = None
    """Adaptive block selection's learned weights per neighbourhood generator (None under lease order)."""


class TaskList(BaseModel):
    model_config = _example({"tasks": [TaskView.model_config["json_schema_extra"]["examples"][0]]})  # type: ignore[index]
    tasks: list[TaskView]


class JoinRequest(WholeNumbers):
    model_config = _example({"name": "worker-1", "proposer": "heuristic", "model": "heuristic"}, forbid=True)
    name: str = Field("agent", max_length=100, pattern=r"^[\w.\-:@ ]*$")
    proposer: str = Field("heuristic", max_length=64)
    model: str = Field("heuristic", max_length=200)


class Joined(BaseModel):
    model_config = _example(
        {
            "agent_id": "a-91c2",
            "token": "<agent token>",
            "task": {
                "id": "t-3f2a9c",
                "kind": "my-kind",
                "params": {"blocks": 16, "seed": 0},
                "mode": "rounds",
                "proposer": {"name": "heuristic", "knobs": {}},
            },
            "lease_ttl": 10.0,
        }
    )
    agent_id: str
    token: str
    task: dict[str, Any]
    lease_ttl: float


class HeadChangesView(BaseModel):
    """``GET /v1/tasks/{id}/changes?since=V``: what merged since version V, for a search under way."""

    model_config = _example({"version": 14, "since": 12, "changes": {"paths": {"7": [[3, 4], [3, 5]]}}})
    version: int = Field(..., description="the head's version; the next request asks since this one")
    since: int
    changes: Any | None = Field(
        None, description="the kind's head_changes from version since to version (null: nothing merged)"
    )


class LeaseGrant(BaseModel):
    model_config = _example(
        {
            "lease_id": "5d1e",
            "agent_id": "a-91c2",
            "block": 3,
            "version": 12,
            "expires_at": 1764478810.0,
            "ttl": 10.0,
            "contract": {
                "block": 3,
                "version": 12,
                "budget": {"rounds": 488},
                "data": {"value": [0.1, 0.2, 0.3, 0.4]},
            },
        }
    )
    lease_id: str
    agent_id: str
    block: int
    version: int
    expires_at: float
    ttl: float
    contract: dict[str, Any] = Field(
        description="the envelope {block, version, budget, data}; with since (the lease asked since=V and the"
        " kind could), data is written against the contract of version V the agent keeps"
    )


class LeaseRenewed(BaseModel):
    model_config = _example({"lease_id": "5d1e", "block": 3, "expires_at": 1764478815.0})
    lease_id: str
    block: int
    expires_at: float


class ProposalIn(WholeNumbers):
    model_config = _example(
        {
            "id": "c0ffee01",
            "lease_id": "5d1e",
            "block": 3,
            "base_version": 12,
            "value": [0.5, -0.1, 0.2, 0.0],
            "predicted_improvement": 0.042,
            "usage": {"calls": 1, "seconds": 0.001, "model": "heuristic"},
        },
        forbid=True,
    )
    id: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        pattern=r"^[\w\-]+$",
        description="client-chosen id: re-sending it is idempotent",
    )
    lease_id: str = Field(..., max_length=64)
    block: int = Field(..., ge=0)
    base_version: int = Field(..., ge=0)
    value: Any
    predicted_improvement: float
    usage: Usage = Field(default_factory=Usage)
    exact_minimizer: bool = Field(
        False,
        description="the value exactly minimizes the block's local objective plus "
        "correction on base_version (precondition of the kind's a priori bound)",
    )

    @classmethod
    def answering(cls, grant: LeaseGrant, draft: Draft, **fields: Any) -> ProposalIn:
        """What an agent in this process submits for ``draft``, proposed on ``grant`` (tests, benchmarks)."""
        base = {"lease_id": grant.lease_id, "base_version": grant.version, "block": draft.block}
        return cls(**base, value=draft.value, predicted_improvement=draft.predicted_improvement, **fields)


class ProposalView(BaseModel):
    model_config = _example(
        {
            "id": "c0ffee01",
            "agent_id": "a-91c2",
            "block": 3,
            "base_version": 12,
            "status": "accepted",
            "verdict": {
                "proposal_id": "c0ffee01",
                "block": 3,
                "status": "accepted",
                "code": "merged",
                "reason": "merged",
                "round": 12,
                "predicted": 0.042,
                "delta": 0.042,
            },
        }
    )
    id: str
    agent_id: str
    block: int
    base_version: int
    status: Literal["accepted", "rejected", "pending"]
    verdict: Verdict | None = None
    next_lease: LeaseGrant | None = Field(
        None,
        description="with ?next_lease=true and a verdict: the agent's next lease, so a steady agent loop "
        "costs one request per proposal (null: lease with POST /leases, which says why)",
    )


class RoundsView(BaseModel):
    model_config = _example(
        {
            "task": "t-3f2a9c",
            "rounds": [
                {
                    "round": 0,
                    "objective": -20.1,
                    "gap": 8.9,
                    "accepted": 4,
                    "interfering": 6,
                    "kappa": 0.17,
                    "gamma": 0.98,
                    "delta": 0.0,
                    "predicted_gap": 9.6,
                    "hit": True,
                    "a_priori_rhs": 9.1,
                    "a_priori_held": True,
                    "t": 1.84,
                    "agent_seconds": 5.2,
                    "merges": None,
                }
            ],
        }
    )
    task: str
    rounds: list[dict[str, Any]] = Field(
        description="history rows; each carries t (seconds since the task was created, at the round's close), "
        "agent_seconds (seconds the agents reported so far) and, for async windows, merges: [t, objective] of "
        "each merge in the window (at most 64)"
    )


class SolutionView(BaseModel):
    model_config = _example(
        {
            "task": "t-3f2a9c",
            "version": 40,
            "objective": -29.0588,
            "feasible": True,
            "solution": {"x": [0.1, 0.2]},
            "state": {"x": [0.1, 0.2]},
        }
    )
    task: str
    version: int
    objective: float
    feasible: bool
    solution: Any
    state: Any


class Health(BaseModel):
    model_config = _example({"status": "ok"})
    status: str
    detail: str | None = None


class ErrorBody(BaseModel):
    """Every error: ``{"error": {"code", "message", ...context}}``."""

    model_config = _example(
        {"error": {"code": "lease_expired", "message": "the lease expired or was released"}}
    )
    error: dict[str, Any]
