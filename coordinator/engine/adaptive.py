"""Adaptive block selection: which neighbourhood generator forms the next blocks, and which block to lease.

A kind names its ways to form blocks (``Neighbourhoods.neighbourhoods``). After every round that may
regroup, the coordinator picks one of them, with a target size, and the round's successors pay it back:
their gain (objective decrease) per unit of cost (agent-seconds, or tokens when the agents report
tokens). The same credits, per block, order the free blocks a lease picks from.

Pure bookkeeping, replayed from the round records (``RoundRecord.selection``) so every replica derives the
same weights from the store, and rebuilt the same way after a restart. Three policies:

- ``lease_order``: today's behaviour (the kind's own regrouping after a round that merged nothing, blocks
  leased least recently leased first); nothing is learned.
- ``ucb1``: the arm maximizing mean normalized reward + c·sqrt(ln N / n) (Auer et al. 2002; CP-SAT picks its
  LNS generators so); an arm never tried comes first.
- ``alns``: a roulette wheel, w ← (1 − r)·w + r·ψ with ψ the round's normalized reward (Ropke & Pisinger 2006;
  MAPF-LNS weighs its destroy heuristics so), drawn with a seed fixed by the round index.

Sizes adapt per generator like CP-SAT's LNS difficulty: a round that gained makes the generator's next
neighbourhood larger, one that did not makes it smaller, within ``[min_size, max_size]``.

When blocks are formed: after a round that merged nothing (as lease order regroups); after every round
(``every_round``); or, with ``hold``, after every round whose blocks all answered, forming anew only the
blocks that did not pay (the leasing side holds an agent whose lease found nothing until the round closes,
so the round closes as soon as every block has answered instead of waiting for a second search on a block
that just paid nothing).
"""

from __future__ import annotations

import copy
import math
import random
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coordinator.engine.records import RoundRecord, SelectionRow
from coordinator.engine.selection_settings import Policy, SelectionSettings
from tasks import capabilities

__all__ = ["KEEP", "Bandit", "Policy", "SelectionSettings", "arms_of", "bandit_of", "row_of"]

KEEP = "partition"
"""The generator that keeps the current blocks (every kind has it)."""


@dataclass
class Arm:
    """One generator's (or one block's) books."""

    pulls: int = 0
    gain: float = 0.0
    cost: float = 0.0
    reward: float = 0.0
    """Sum of per-round normalized rewards ψ in [0, 1] (see ``Bandit.normalize``)."""
    weight: float = 1.0
    """ALNS wheel weight."""
    size: float = 0.5

    def mean(self) -> float:
        return self.reward / self.pulls if self.pulls else 0.0


def reward_of(gain: float, cost: float) -> float:
    """Gain per unit cost; a round whose agents report no cost counts one unit (it still paid a round)."""
    return max(0.0, gain) / (cost if cost > 0 else 1.0)


WINDOW = 8


def normalize(recent: list[float], reward: float) -> float:
    """ψ of ``reward`` against the sliding window ``recent`` (updated in place)."""
    recent.append(reward)
    del recent[:-WINDOW]
    top = max(recent)
    return reward / top if top > 0 else 0.0


@dataclass
class Bandit:
    """The learned state of one task: per generator and per block, replayed round by round."""

    arms: list[str]
    settings: SelectionSettings = field(default_factory=SelectionSettings)
    gens: dict[str, Arm] = field(default_factory=dict)
    blocks: dict[int, Arm] = field(default_factory=dict)
    current: str = KEEP
    """The generator that formed the blocks the next round works on."""
    current_size: float | None = None
    rounds: int = 0
    recent: list[float] = field(default_factory=list)
    """The last ``WINDOW`` rounds' raw rewards: ψ = reward / their max. A sliding maximum, because the first
    rounds of a run (repairing conflicts, say) gain orders of magnitude more than later ones and would
    otherwise flatten every later reward to 0."""
    block_recent: list[float] = field(default_factory=list)
    objective: float | None = None

    def __post_init__(self) -> None:
        if not self.arms:
            raise ValueError("a bandit needs at least one arm")
        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arm names repeat: {self.arms}")
        for a in self.arms:
            self.gens.setdefault(a, Arm(size=self.settings.clamp(self.settings.size)))
        if self.current not in self.gens:
            self.current = self.arms[0]

    # -- bookkeeping --------------------------------------------------------------------------
    def credit(self, gain: float, row: SelectionRow) -> None:
        """One round's result: its gain and cost to the generator in force, per block to the blocks, then the
        generator the round chose (``row.formed``) is in force for the next one."""
        s = self.settings
        cost = float(row.tokens) if row.tokens > 0 else row.seconds
        psi = normalize(self.recent, reward_of(gain, cost))
        arm = self.gens.get(self.current)
        if arm is not None:
            arm.pulls += 1
            arm.gain += max(0.0, gain)
            arm.cost += cost
            arm.reward += psi
            arm.weight = max(s.floor, (1 - s.reaction) * arm.weight + s.reaction * psi)
            if self.current_size is not None:
                factor = s.growth if gain > 0 else 1 / s.growth
                arm.size = s.clamp(self.current_size * factor)
        raw = {int(b): reward_of(g, c) for b, (g, c) in row.blocks.items()}
        self.block_recent.extend(raw.values())  # one round's blocks are normalized together
        del self.block_recent[: -WINDOW * max(1, len(raw))]
        top = max(self.block_recent, default=0.0)
        for b, (g, c) in row.blocks.items():
            book = self.blocks.setdefault(int(b), Arm())
            book.pulls += 1
            book.gain += max(0.0, g)
            book.cost += c
            book.reward += raw[int(b)] / top if top > 0 else 0.0
        self.rounds += 1
        if row.formed is not None and row.formed in self.gens:
            self.current, self.current_size = row.formed, row.size

    def replay(self, initial_objective: float, records: Iterable[RoundRecord]) -> Bandit:
        """Credit every record not seen yet (records are the task's rounds from the first, or from
        ``self.rounds`` on); returns self."""
        objective = self.objective if self.objective is not None else initial_objective
        for rec in records:
            if rec.round < self.rounds:
                continue
            if rec.selection is not None:
                self.credit(objective - rec.objective, rec.selection)
            else:
                self.rounds += 1
            objective = rec.objective
        self.objective = objective
        return self

    # -- decisions ----------------------------------------------------------------------------
    def scores(self) -> dict[str, float]:
        """Each generator's current weight as the policy sees it: the UCB1 index (inf: untried), the ALNS
        wheel weight, or 1 for ``lease_order``."""
        s = self.settings
        if s.policy == "alns":
            return {a: self.gens[a].weight for a in self.arms}
        if s.policy == "ucb1":
            total = sum(self.gens[a].pulls for a in self.arms)
            out = {}
            for a in self.arms:
                arm = self.gens[a]
                if arm.pulls == 0:
                    out[a] = math.inf
                    continue
                out[a] = arm.mean() + s.exploration * math.sqrt(math.log(max(total, 1)) / arm.pulls)
            return out
        return {a: 1.0 for a in self.arms}

    def choose(self, seed: int, merged: bool) -> tuple[str, float]:
        """The generator for the next blocks and its size. After a round that merged nothing, keeping the
        same blocks would only repeat it: the keep arm is left out then (when there is another)."""
        candidates = [a for a in self.arms if merged or a != KEEP] or list(self.arms)
        scores = self.scores()
        if self.settings.policy == "alns":
            rng = random.Random(seed)
            pick = rng.choices(candidates, weights=[scores[a] for a in candidates])[0]
        else:  # ucb1 (and lease_order, which never asks): the best index, ties to the earlier-listed arm
            pick = max(candidates, key=lambda a: scores[a])
        return pick, self.gens[pick].size

    def block_order(self, blocks: Sequence[int]) -> list[int]:
        """Blocks best first by UCB1 over their gain per cost (untried first, in the given order)."""
        total = sum(b.pulls for b in self.blocks.values())
        c = self.settings.exploration

        def index(b: int) -> float:
            book = self.blocks.get(b)
            if book is None or book.pulls == 0:
                return math.inf
            return book.mean() + c * math.sqrt(math.log(max(total, 1)) / book.pulls)

        return sorted(blocks, key=lambda b: -index(b))

    def view(self) -> dict[str, Any]:
        """What the task view, the report and ``/metrics`` show."""
        return {
            "policy": self.settings.policy,
            "current": self.current,
            "rounds": self.rounds,
            "generators": {
                a: {
                    "weight": _finite(w),
                    "pulls": self.gens[a].pulls,
                    "gain": self.gens[a].gain,
                    "cost": self.gens[a].cost,
                    "gain_per_cost": (self.gens[a].gain / self.gens[a].cost) if self.gens[a].cost else 0.0,
                    "size": self.gens[a].size,
                }
                for a, w in self.scores().items()
            },
        }


def arms_of(settings: SelectionSettings, offered: Sequence[str]) -> list[str]:
    """The generators a task uses: the kind's, or the requested subset of them (ValueError names the rest)."""
    if settings.generators is None:
        return list(offered)
    unknown = [g for g in settings.generators if g not in offered]
    if unknown:
        names = ", ".join(map(repr, unknown))
        raise ValueError(f"no neighbourhood generator {names} in this kind (it has {', '.join(offered)})")
    return list(dict.fromkeys(settings.generators))


def bandit_of(settings: SelectionSettings, arms: Sequence[str]) -> Bandit | None:
    """A task's fresh bandit, or None when it learns nothing (lease order, or a kind without generators)."""
    return Bandit(list(arms), settings) if settings.adaptive and arms else None


def _finite(x: float) -> float | None:
    """JSON has no infinity: an untried UCB arm shows as None."""
    return x if math.isfinite(x) else None


def row_of(
    proposals: Iterable[tuple[int, float, int]],
    accepted: Mapping[int, float],
    formed: tuple[str, float] | None,
) -> SelectionRow:
    """A round's selection row from its proposals' (block, seconds, tokens) and accepted blocks' gains."""
    seconds, tokens = 0.0, 0
    per: dict[int, list[float]] = {}
    for block, sec, tok in proposals:
        seconds += sec
        tokens += tok
        book = per.setdefault(block, [0.0, 0.0])
        book[1] += float(tok) if tok > 0 else sec
    for block, gain in accepted.items():
        per.setdefault(block, [0.0, 0.0])[0] += gain
    return SelectionRow(
        seconds=seconds,
        tokens=tokens,
        blocks={b: (g, c) for b, (g, c) in per.items()},
        formed=None if formed is None else formed[0],
        size=None if formed is None else formed[1],
    )


def former_of(
    task: Any,
    bandit: Bandit,
    task_id: str,
    index: int,
    before: float,
    spent: Sequence[tuple[int, float, int]],
    formed: list[tuple[str, float]],
) -> Callable[[Any, float, frozenset[int]], Any | None]:
    """The engine's ``former`` for round ``index``: credit the round's outcome (objective ``before`` → after,
    cost ``spent``, on a copy: the stored record credits it for real) so the arm in force is judged on it
    too, choose a generator (recorded in ``formed``) and let the kind (``Neighbourhoods.form_blocks``) form
    the next blocks with it. The seed depends on the task and the round only, so every replica draws the
    same arm.
    Under ``hold``, after a round that merged, the blocks that merged (``paid``) are kept and the others
    formed anew among themselves, by a generator other than the keep arm (when at least two are left)."""
    seed = zlib.crc32(task_id.encode()) + index

    def form(state: Any, objective: float, paid: frozenset[int] = frozenset()) -> Any | None:
        s = bandit.settings
        merged = objective < before
        keep: frozenset[int] = frozenset()
        if merged and not s.every_round:
            if not s.hold or task.n_blocks - len(paid) < 2:
                return None  # the blocks paid: they stay (and their generator keeps the credit)
            keep = frozenset(paid)  # hold: the blocks that paid stay, the others are formed anew
        trial = copy.deepcopy(bandit)
        trial.credit(before - objective, row_of(spent, {}, None))
        generator, size = trial.choose(seed, merged=merged and not keep)
        formed.append((generator, size))
        return capabilities.form_blocks(task, state, generator, size, index, keep=keep)

    return form
