"""Lab probe (2026-12-06): how many walked robots ``BlockSearch.follow`` puts back per robot it takes, at a
team's contracts and at its head-feed asks. One virtual replay of random-32-32-10 k = 300; not a product
module.

    PYTHONPATH=. .venv/bin/python benchmarks/results/team_scaling/2026-12-06-gap/reverts.py SECONDS AGENTS \
        [-- team_scaling virtual options, e.g. --knob follow_every=0.02]
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any

from tasks.routing import lns, repair

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # labrun.py, the team-scaling labs' helper
from labrun import replay_once  # noqa: E402

tally: collections.Counter[str] = collections.Counter()
where = {"now": "contract"}


def hook() -> None:
    follow = repair.BlockSearch.follow

    def counted(self: Any, before: Any, now: Any) -> tuple[int, int]:
        taken, reverted = follow(self, before, now)
        at = where["now"]
        tally[f"{at}: follows"] += 1
        tally[f"{at}: robots taken"] += taken
        tally[f"{at}: walked robots put back"] += reverted
        return taken, reverted

    take = lns.RoutingProposer._take

    def at_an_ask(self: Any, *a: Any) -> Any:
        where["now"] = "ask"
        try:
            return take(self, *a)
        finally:
            where["now"] = "contract"

    repair.BlockSearch.follow = counted  # type: ignore[method-assign]
    lns.RoutingProposer._take = at_an_ask  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("seconds")
    parser.add_argument("agents", type=int)
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args()
    hook()
    replay_once(args.seconds, args.agents, 1, args.rest)
    for key, count in sorted(tally.items()):
        print(f"  {key}: {count}")


if __name__ == "__main__":
    main()
