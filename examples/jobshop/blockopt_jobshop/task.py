"""Job-shop scheduling as a blockopt kind.

A block is a group of jobs, and its value one key per operation of those jobs:
each machine runs its operations in the order of their keys, so a block's agent
moves its own jobs' operations among the others' (which keep their keys), and any
finite keys are a well-formed value, checked without the state. Groups of jobs
rather than machines because the team's search is block-coordinate: from the
schedule at 59 where 3 agents on pairs of machines stopped on ft06, CP-SAT proved
that no pair of machines improves on its own while some pair of jobs reaches 55
(``examples/jobshop/README.md``). F = makespan + W x operations stuck behind a
cycle (keys out of route order can make one), W above any makespan. The makespan
is a max over the whole schedule, so any change can move it: the footprint is the
default "everything", and the engine measures every pair of proposals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from blockopt_jobshop import exact, schedule
from blockopt_jobshop.instances import TAILLARD_15X15, load
from blockopt_jobshop.prompt import JobShopPrompt
from blockopt_jobshop.search import CriticalPathSearch
from tasks import InvalidProposal, Reference, Task

Value = dict[int, tuple[float, ...]]
"""job -> one key per operation, in route order."""


@dataclass(frozen=True)
class State:
    keys: tuple[tuple[float, ...], ...]
    """keys[j][k]: the key of job j's k-th operation; machines run operations in key order."""
    groups: tuple[tuple[int, ...], ...]
    """groups[b] = the jobs of block b."""


def _finite(x: Any) -> bool:
    """A number a float holds, finite (JSON can carry a 400-digit integer, and Python's parser Infinity)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


class JobShopParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instance: str = Field("ft06", description=f"ft06, or Taillard's {', '.join(TAILLARD_15X15)} (15x15)")
    blocks: int | None = Field(None, ge=1, le=64, description="job groups (default: one per job)")
    exact_limit: float = Field(
        10.0, ge=0.0, le=3600.0, description="CP-SAT seconds for the reference (0 = off)"
    )
    seed: int = Field(0, ge=0, description="seed of the proposers")

    @field_validator("instance")
    @classmethod
    def _known(cls, name: str) -> str:
        load(name)
        return name


class JobShopKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    iterations: int = Field(100, ge=1, le=100_000, description="tabu-search steps per proposal")
    tenure: int = Field(5, ge=0, le=1000, description="steps a swapped pair stays tabu")
    regroupings: int = Field(  # ft06, 3 agents: 12 stalled above 55 in 1 run of 6; 40 reached 55 in 20 of 20
        40, ge=0, le=1000, description="empty rounds spent regrouping jobs before stalling"
    )


class JobShopTask(Task[State, JobShopParams]):
    """Job-shop scheduling: operation orders minimizing the makespan (ft06, Taillard 15x15)."""

    kind = "jobshop"
    Params = JobShopParams
    ProposerParams = JobShopKnobs
    rejection_codes = frozenset({"unknown_job", "bad_key"})
    prompt = JobShopPrompt
    presets = {"taillard": {"instance": "ta01", "exact_limit": 60.0}}
    example = {"instance": "ft06", "blocks": 3, "iterations": 50}

    def __init__(self, params: JobShopParams) -> None:
        super().__init__(params)
        self.inst = load(params.instance)
        n = self.inst.n_jobs
        blocks = min(params.blocks or n, n)
        self.groups = tuple(tuple(j for j in range(n) if j % blocks == b) for b in range(blocks))

    @classmethod
    def team_defaults(cls, agents: int, mode: str = "rounds") -> dict[str, Any]:
        return {"blocks": agents}

    def run_seed(self) -> int:
        return self.params.seed

    @property
    def name(self) -> str:
        return f"{self.inst.name}-b{self.n_blocks}"

    @property
    def n_blocks(self) -> int:
        return len(self.groups)

    def initial_state(self) -> State:
        """Keys = start times of the schedule that runs jobs in index order on every machine (no cycle)."""
        first = schedule.decode(self.inst, {m: self.inst.jobs_on(m) for m in range(self.inst.n_machines)})
        keys = tuple(
            tuple(float(first.start[(j, k)]) for k in range(len(r))) for j, r in enumerate(self.inst.routes)
        )
        return State(keys, self.groups)

    def _sequences(self, state: State) -> dict[int, list[int]]:
        return schedule.sequences_from_keys(self.inst, dict(enumerate(state.keys)))

    def objective(self, state: State) -> float:
        return schedule.objective(self.inst, self._sequences(state))

    def apply(self, state: State, changes: Any) -> State:
        keys = list(state.keys)
        for value in changes.values():
            for j, ks in value.items():
                keys[j] = tuple(ks)
        return State(tuple(keys), state.groups)

    def block_value(self, state: State, block: int) -> Value:
        return {j: state.keys[j] for j in state.groups[block]}

    def regroup(self, state: State, attempt: int, keep: frozenset[int] = frozenset()) -> State | None:
        """Jobs met one after the other on the longest path share a block (sizes kept), every other attempt a
        random grouping, so a change that needs two jobs to move together comes within one agent's reach.
        The groups in ``keep`` stay; the others share out their own jobs."""
        kept = {j for b in keep for j in state.groups[b]}
        critical = schedule.decode(self.inst, self._sequences(state)).critical
        path = [j for j in dict.fromkeys(j for j, _ in critical) if j not in kept]
        if not path:
            return None
        rng = random.Random(attempt)
        shift = attempt % len(path)
        rest = [j for j in range(self.inst.n_jobs) if j not in path and j not in kept]
        rng.shuffle(rest)
        order = path[shift:] + path[:shift] + rest
        if attempt % 2:
            rng.shuffle(order)
        groups, i = [], 0
        for b, old in enumerate(state.groups):
            if b in keep:
                groups.append(old)
                continue
            groups.append(tuple(sorted(order[i : i + len(old)])))
            i += len(old)
        return None if tuple(groups) == state.groups else State(state.keys, tuple(groups))

    def contract(self, state: State, block: int) -> dict[str, Any]:
        mine = set(state.groups[block])
        return {
            "kind": self.kind,
            "instance": self.inst.name,
            "jobs": sorted(mine),
            "routes": [[list(op) for op in route] for route in self.inst.routes],
            "keys": {str(j): list(state.keys[j]) for j in sorted(mine)},
            "fixed": {str(j): list(ks) for j, ks in enumerate(state.keys) if j not in mine},
            "makespan": self.objective(state),
        }

    def block_elements(self, state: State, block: int) -> frozenset[Hashable]:
        """The block's jobs in ``state`` (``regroup`` changes them, keeping each block's size)."""
        return frozenset(("job", j) for j in state.groups[block])

    def written_elements(self, state: State, block: int, value: Value) -> frozenset[Hashable]:
        """The jobs the value gives keys to: the coordinator refuses a value that names a job of another
        block (``validate`` has no state, so it checks only that the value names as many jobs as the block
        holds)."""
        return frozenset(("job", j) for j in value)

    def validate(self, block: int, value: Any) -> Value:
        if not isinstance(block, int) or not 0 <= block < self.n_blocks:
            raise InvalidProposal(f"block {block} does not exist (0..{self.n_blocks - 1})", "wrong_block")
        if not isinstance(value, dict):
            raise InvalidProposal("a block value is an object {job: [one key per operation]}", "bad_shape")
        jobs = {str(j) for j in range(self.inst.n_jobs)}
        if not set(value) <= jobs or len(value) != len(self.groups[block]):
            raise InvalidProposal(
                f"block {block} holds {len(self.groups[block])} jobs, named by their ids "
                f"0..{self.inst.n_jobs - 1}; got keys {sorted(map(str, value))[:8]}",
                "unknown_job",
            )
        decoded: Value = {}
        for name, ks in value.items():
            j = int(name)
            ops = len(self.inst.routes[j])
            if not isinstance(ks, list) or len(ks) != ops:
                raise InvalidProposal(f"job {j}: give one key per operation ({ops})", "bad_shape")
            if not all(_finite(x) for x in ks):
                raise InvalidProposal(f"job {j}: keys must be finite numbers", "bad_key")
            decoded[j] = tuple(float(x) for x in ks)
        return decoded

    def encode_value(self, value: Value) -> Any:
        return {str(j): list(ks) for j, ks in sorted(value.items())}

    @cached_property
    def _reference(self) -> Reference:
        if self.params.exact_limit <= 0:
            return Reference(
                float(self.inst.trivial_bound()),
                "lower_bound",
                method="largest job or machine load (trivial bound)",
                proven=True,
            )
        _, bound, proven = exact.solve(self.inst, self.params.exact_limit)
        return Reference(
            float(bound),
            "optimum" if proven else "lower_bound",
            method="CP-SAT on the disjunctive model",
            solver=exact.SOLVER,
            workers=exact.WORKERS,
            seed=exact.SEED,
            time_limit=self.params.exact_limit,
            proven=proven,
        )

    def reference(self) -> Reference:
        return self._reference

    def feasible(self, state: State) -> bool:
        return schedule.decode(self.inst, self._sequences(state)).stuck == 0

    def dump_state(self, state: State) -> Any:
        return {"keys": [list(ks) for ks in state.keys], "groups": [list(g) for g in state.groups]}

    def load_state(self, data: Any) -> State:
        return State(
            tuple(tuple(float(x) for x in ks) for ks in data["keys"]),
            tuple(tuple(int(j) for j in g) for g in data["groups"]),
        )

    def solution(self, state: State) -> Any:
        s = schedule.decode(self.inst, self._sequences(state))
        return {
            "makespan": s.makespan,
            "stuck_operations": s.stuck,
            "sequences": {str(m): seq for m, seq in sorted(self._sequences(state).items())},
        }

    def lag_rounds(self, knobs: BaseModel) -> int:
        """Empty rounds the team may spend on other groupings of the jobs (``regroup``) before it calls the
        task stalled: a block's search is exhausted with the other jobs fixed, while the same jobs grouped
        differently may still improve."""
        return JobShopKnobs.model_validate(knobs.model_dump()).regroupings

    def make_proposer(self, knobs: BaseModel, seed: int = 0) -> CriticalPathSearch:
        k = JobShopKnobs.model_validate(knobs.model_dump())
        return CriticalPathSearch(k.iterations, k.tenure, seed=self.params.seed * 7919 + seed)
