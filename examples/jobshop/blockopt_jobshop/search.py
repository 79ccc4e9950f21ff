"""The heuristic proposer: tabu search on the critical path, moving only the block's jobs.

Only operations on the critical (longest) path can shorten the makespan, so the
moves are the swaps of two adjacent critical operations on one machine where one
of them belongs to the block (N1 of van Laarhoven et al.: such a swap never
creates a cycle). A swap moves the block's operation past the other one by giving
it a key between its new neighbours'. The search takes the best non-tabu swap each
step, even a worsening one, with ties on the makespan broken by the total
completion time, so it walks along plateaus and out of local optima; the other
blocks' keys stay fixed, as the contract gives them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from blockopt_jobshop.instances import Instance
from blockopt_jobshop.schedule import critical_swaps, decode, flow_time, objective, sequences_from_keys
from tasks import Draft, Proposer

Keys = dict[int, list[float]]


def instance_of(data: Mapping[str, Any]) -> Instance:
    return Instance(
        str(data["instance"]), tuple(tuple((int(m), int(d)) for m, d in r) for r in data["routes"])
    )


class CriticalPathSearch(Proposer):
    def __init__(self, iterations: int, tenure: int, seed: int) -> None:
        self.iterations = iterations
        self.tenure = tenure
        self.rng = random.Random(seed)

    def propose(self, contract: Mapping[str, Any]) -> Draft | None:
        data = contract["data"]
        inst = instance_of(data)
        mine = {int(j) for j in data["keys"]}
        keys: Keys = {
            int(j): [float(x) for x in ks] for part in ("keys", "fixed") for j, ks in data[part].items()
        }
        machines = set(range(inst.n_machines))
        seqs = sequences_from_keys(inst, keys)
        start = best = objective(inst, seqs)
        best_keys = {j: list(keys[j]) for j in mine}
        tabu: dict[tuple[int, int, int], int] = {}
        for it in range(self.iterations):
            scored = []
            for m, a, b in critical_swaps(inst, decode(inst, seqs), machines):
                if a not in mine and b not in mine:
                    continue
                trial = moved(inst, keys, seqs, m, a, b, mine)
                trial_seqs = sequences_from_keys(inst, trial)
                value = objective(inst, trial_seqs)
                if tabu.get((m, a, b), -1) < it or value < best:
                    scored.append((value, flow_time(inst, trial_seqs), self.rng.random(), m, a, b, trial))
            if not scored:
                break
            value, _, _, m, a, b, keys = min(scored, key=lambda s: s[:3])
            seqs = sequences_from_keys(inst, keys)
            tabu[(m, b, a)] = it + self.tenure  # do not swap the pair back for a while
            if value < best:
                best, best_keys = value, {j: list(keys[j]) for j in mine}
        if best >= start:
            return None
        return Draft(
            int(contract["block"]),
            {str(j): ks for j, ks in sorted(best_keys.items())},
            start - best,
            {"iterations": self.iterations},
        )


def moved(
    inst: Instance, keys: Keys, seqs: dict[int, list[int]], m: int, a: int, b: int, mine: set[int]
) -> Keys:
    """``keys`` with a and b (adjacent on machine m, a first) swapped by re-keying the block's one."""
    seq = seqs[m]
    i = seq.index(a)

    def key(job: int) -> float:
        return keys[job][[mm for mm, _ in inst.routes[job]].index(m)]

    def rekey(job: int, value: float) -> Keys:
        k = [mm for mm, _ in inst.routes[job]].index(m)
        return {**keys, job: [value if n == k else x for n, x in enumerate(keys[job])]}

    if b in mine:  # b jumps before a: between a's predecessor and a
        low = key(seq[i - 1]) if i > 0 else key(a) - 2.0
        return rekey(b, (low + key(a)) / 2.0)
    high = key(seq[i + 2]) if i + 2 < len(seq) else key(b) + 2.0  # a jumps after b
    return rekey(a, (key(b) + high) / 2.0)
