"""Plain records the engine reads and writes: proposals, verdicts, snapshots, rounds.

They are pydantic models so that stores can persist them as JSON and the API
can return them unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from coordinator.json_integers import WholeNumbers

MergePolicy = Literal["independent", "checked"]
MergeKind = Literal["none", "independent", "checked_combination"]


class Usage(WholeNumbers):
    """What producing a proposal cost, as honestly reported by the agent."""

    model_config = ConfigDict(strict=True)  # part of a request body: false is not 0

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    reasoning_tokens: int = Field(0, ge=0)
    calls: int = Field(0, ge=0)
    seconds: float = Field(0.0, ge=0.0)
    model: str = Field("heuristic", max_length=200)
    prompt_chars: int = Field(
        0, ge=0, description="characters of the prompt the model read, first turn (trajectory export)"
    )
    response_chars: int = Field(
        0, ge=0, description="characters the model wrote, all turns (trajectory export)"
    )

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class UsageTotals(BaseModel):
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0

    def add(self, usage: Usage) -> None:
        self.tokens += usage.tokens
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.reasoning_tokens += usage.reasoning_tokens
        self.calls += usage.calls
        self.seconds += usage.seconds


class Proposal(BaseModel):
    id: str
    agent: str
    block: int
    value: Any
    base_version: int
    predicted_improvement: float
    usage: Usage = Field(default_factory=Usage)
    exact_minimizer: bool = False
    """The agent says its value exactly minimizes its block's local objective plus correction on
    ``base_version`` (the precondition of a kind's a priori bound; noise or staleness in the correction it
    was given is what the bound then tests)."""


Status = Literal["accepted", "rejected", "pending"]


class Verdict(BaseModel):
    proposal_id: str
    block: int
    status: Status
    code: str
    """``merged``, ``invalid_proposal``, ``stale_base``, ``not_improving``, ``not_selected``, ..."""
    reason: str
    round: int | None = None
    predicted: float | None = None
    delta: float | None = None
    """The measured standalone improvement Δ_p (when it was scored exactly)."""
    screened: float | None = None
    """The coordinator's screened prediction of Δ_p (``Screening.screen_change``; None when the kind has no screen)."""
    repaired: bool = False
    """Merged as the kind's repair on the head (``Rebasing.rebase``), not as sent: blocks merged after its base
    were in its way."""
    rebased: bool = False
    """Merged on a head newer than its base version (scored again there, as sent or repaired): other blocks
    merged while its agent worked, and it still improved."""


@dataclass(frozen=True)
class Snapshot:
    """One committed state x_t (the task's live state object), its objective and,
    per block, the version it last changed at. Stores persist it through
    ``Persistence.dump_state``; the engine never mutates it."""

    version: int
    objective: float
    block_versions: tuple[int, ...]
    state: Any


class SelectionRow(BaseModel):
    """What adaptive block selection (``coordinator/engine/adaptive.py``) learns from one round."""

    seconds: float = 0.0
    """Agent-seconds the round's proposals (and abandoned leases) reported."""
    tokens: int = 0
    blocks: dict[int, tuple[float, float]] = Field(default_factory=dict)
    """Per block proposed on: (accepted gain, cost in tokens, or seconds when no tokens were reported)."""
    formed: str | None = None
    """The neighbourhood generator chosen after this round (None: the blocks stayed as they were)."""
    size: float | None = None
    """Its target size (fraction of a block)."""


class ScreenCheck(BaseModel):
    """One exact evaluation of a combination that the screen selected (how often screening agreed)."""

    proposals: int
    """How many proposals the combination merges."""
    predicted: float
    """Its screened gain (``Screening.screen_change``)."""
    exact: float | None
    """Its exact gain (``IncrementalScoring.evaluate_change``); None when the exact check refused it (``code`` says why)."""
    code: str | None = None
    merged: bool = False
    seconds: float = 0.0
    """Wall time of the exact evaluation."""


class RoundRecord(BaseModel):
    """One row of the run history (docs/architecture.md §10) plus what a user debugging a run wants."""

    round: int
    version: int
    objective: float
    gap: float
    proposals: int
    accepted: int
    interfering: int
    """Edges of the interference graph among improving proposals."""
    merge_kind: MergeKind
    kappa: float | None
    """Block progress; 0 when nothing merged (every round is a step)."""
    gamma: float | None
    """Combination efficiency; None when nothing merged."""
    delta: float | None
    predicted_gap: float | None = None
    """The one-step forecast B_t+1, made from earlier rounds before this round's proposals were scored."""
    hit: bool | None = None
    """gap <= predicted_gap (None: no forecast yet)."""
    a_priori_rhs: float | None = None
    """(1 − c)·g_t of the kind's a priori bound (None: the kind states none, or its precondition failed)."""
    a_priori_held: bool | None = None
    a_priori_precondition: str | None = None
    """Why the a priori bound's precondition failed this round (None when it held or the kind states none)."""
    accounting_violations: int = 0
    """Books that did not balance (a bug; logged, and raised under ``BLOCKOPT_STRICT_ACCOUNTING``)."""
    checks: int = 0
    """Exact evaluations of combinations done to select the merge."""
    engine_seconds: float = 0.0
    eval_seconds: float = 0.0
    regrouped: bool = False
    """The task re-partitioned its variables into blocks after the round (a new version, same objective): after
    a round that merged nothing, or under adaptive selection after any round (``selection.formed``)."""
    selection: SelectionRow | None = None
    """Adaptive selection's books of the round (None under ``lease_order`` and in async windows)."""
    screen: list[ScreenCheck] | None = None
    """Screened rounds (the kind has ``Screening.screen_change``): every exact check of a combination the screen
    selected, in order, at most ``EngineSettings.screen_exact_checks``; None when the round was scored exactly."""
    screened: int = 0
    """Screen evaluations (standalone, pairs and combinations) the round made instead of exact ones."""
    t: float | None = None
    """Seconds since the task was created when the round (or async window) closed (None: recorded before
    rounds carried their time)."""
    agent_seconds: float | None = None
    """Agent-seconds spent so far: the sum of the seconds every proposal and abandoned lease reported in its
    usage up to the close (reported usage, not lease time; None: not recorded)."""
    merges: list[tuple[float, float]] | None = None
    """Async windows: (seconds since creation, objective after the merge) of each merge in the window, at most
    ``MAX_MERGE_POINTS`` (thinned evenly, the last kept), so the anytime curve has the resolution of commits."""


MAX_MERGE_POINTS = 64
"""Merge points one async window keeps (``RoundRecord.merges``): bounds a record's size on a busy window."""


def keep_point(points: list[tuple[float, float]], point: tuple[float, float]) -> list[tuple[float, float]]:
    """``points`` with ``point`` appended, thinned to at most ``MAX_MERGE_POINTS``: when full, every second
    point is dropped (the first and the newest stay), so a window's curve keeps its shape at half resolution."""
    out = [*points, point]
    if len(out) > MAX_MERGE_POINTS:
        out = out[:-1:2] + [out[-1]]
    return out
