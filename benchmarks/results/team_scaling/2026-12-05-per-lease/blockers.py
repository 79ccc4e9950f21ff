"""Of the robots a lease's walks meet along a delayed robot's way, the share held by other agents.

A diagnostic, not a benchmark (its replay's timings are not read): each lease formation's walks are run a
second time on a copy of their random state with every robot eligible, and the robots met there are counted,
with those outside the lease's pool (held by another agent). One replay of N agents on random-32-32-10
k = 300, seed 1, for the given seconds:

    PYTHONPATH=. .venv/bin/python benchmarks/results/team_scaling/2026-12-05-per-lease/blockers.py 8 10
"""

from __future__ import annotations

import copy
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import tasks.routing.lease as lease_module
from benchmarks.lib.virtual_team import ReplayConfig, replay
from tasks.registry import kind_class
from tasks.routing import destroy

tally: Counter[str] = Counter()
original = destroy.walk_from
walk: Callable[..., list[int]] = original  # (forwarded as called: positionally, then by keyword)


def counted(*args: Any, eligible: set[int] | None = None, **kwargs: Any) -> list[int]:
    """``walk_from`` as lease formation calls it (eligible robots by keyword), counting on the side."""
    if eligible is not None:
        grid, path, goal, chosen, k, rng, index = args
        anyone = original(grid, path, goal, list(chosen), k, copy.deepcopy(rng), index, **kwargs)
        met = [j for j in anyone if j not in chosen]
        tally["walks"] += 1
        tally["met"] += len(met)
        tally["held"] += sum(1 for j in met if j not in eligible)
    return walk(*args, eligible=eligible, **kwargs)


def main() -> None:
    agents, seconds = int(sys.argv[1]), float(sys.argv[2])
    lease_module.walk_from = counted
    cls = kind_class("routing")
    team = cls.team_defaults(agents, "async")
    params = {k: v for k, v in team.items() if k in cls.Params.model_fields}
    params |= {"map": "random-32-32-10", "scen": "random-1", "robots": 300, "seed": 1}
    r = replay(ReplayConfig(kind="routing", params=params, agents=agents, seconds=seconds, seed=1))
    share = tally["held"] / max(1, tally["met"])
    print(
        f"N={agents} {seconds:g}s final {r.curve[-1][1]:.0f}: walks {tally['walks']},"
        f" robots met {tally['met']}, held by other agents {tally['held']} ({share:.0%})"
    )


if __name__ == "__main__":
    main()
