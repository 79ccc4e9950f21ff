"""Where a team agent's CPU goes, without a profiler: thread CPU inside ``propose`` and inside its parts (the
LNS steps, drawing neighbourhoods, following the merges, building a search), summed over every call.

    python steps_probe.py SECONDS AGENTS SEED      # from a tree's root, PYTHONPATH=.

Not a product module; it imports ``labrun.py`` from ``benchmarks/results/team_scaling``.
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, "benchmarks/results/team_scaling")  # labrun.py

from labrun import replay_once  # noqa: E402

from tasks.routing import lns, repair  # noqa: E402

spent: collections.Counter[str] = collections.Counter()


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.thread_time() - t0

    return wrapped


def main() -> None:
    repair.BlockSearch.try_group = timed("try_group", repair.BlockSearch.try_group)  # type: ignore[method-assign]
    repair.BlockSearch.__init__ = timed("search_build", repair.BlockSearch.__init__)  # type: ignore[method-assign]
    for name in ("_neighbourhood", "_follow", "propose"):
        setattr(lns.RoutingProposer, name, timed(name.strip("_"), getattr(lns.RoutingProposer, name)))
    run = replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [])
    print({k: round(v, 2) for k, v in spent.items()}, "agent cpu", round(sum(run["agent_cpu"]), 1))


if __name__ == "__main__":
    main()
