"""cProfile of every agent's ``propose`` calls in a virtual replay, merged into one table.

    python agent_profile.py SECONDS AGENTS SEED OUT      # from a tree's root, PYTHONPATH=.

Not a product module; it imports ``labrun.py`` from ``benchmarks/results/team_scaling``. A call's thread CPU
includes the profiler's own cost, so the replay's virtual time runs faster than without it: read shares only.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import threading
from typing import Any

sys.path.insert(0, "benchmarks/results/team_scaling")  # labrun.py

from labrun import replay_once  # noqa: E402

from tasks.routing import lns  # noqa: E402

profiles: list[cProfile.Profile] = []
lock = threading.Lock()
original = lns.RoutingProposer.propose


def profiled(self: Any, contract: Any) -> Any:
    profile = cProfile.Profile()
    profile.enable()
    try:
        return original(self, contract)
    finally:
        profile.disable()
        with lock:
            profiles.append(profile)


def main() -> None:
    lns.RoutingProposer.propose = profiled  # type: ignore[method-assign]
    run = replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [])
    stats = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        stats.add(profile)
    with open(sys.argv[4], "w") as out:
        stats.stream = out  # type: ignore[attr-defined]
        print("calls", len(profiles), "agent cpu", round(sum(run["agent_cpu"]), 1), file=out)
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
