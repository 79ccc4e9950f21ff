"""Where a team agent's CPU goes, without a profiler: thread CPU inside ``propose`` and inside its parts (the
LNS steps, drawing neighbourhoods, following the merges, building a search), summed over every call.

    python steps_probe.py SECONDS AGENTS SEED      # from a tree's root, PYTHONPATH=.

Not a product module; it imports ``labrun.py`` from its own checkout's ``benchmarks/results/team_scaling``,
and the product from the tree it runs in.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # labrun.py of this script's own checkout

from labrun import replay_once, thread_cpu  # noqa: E402

from tasks.routing import lns, repair  # noqa: E402

spent: collections.Counter[str] = collections.Counter()


def main() -> None:
    search = repair.BlockSearch
    search.try_group = thread_cpu(spent, "try_group", search.try_group)  # type: ignore[method-assign]
    search.__init__ = thread_cpu(spent, "search_build", search.__init__)  # type: ignore[method-assign]
    for name in ("_neighbourhood", "_follow", "propose"):
        method = getattr(lns.RoutingProposer, name)
        setattr(lns.RoutingProposer, name, thread_cpu(spent, name.strip("_"), method))
    run = replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [])
    print({k: round(v, 2) for k, v in spent.items()}, "agent cpu", round(sum(run["agent_cpu"]), 1))


if __name__ == "__main__":
    main()
