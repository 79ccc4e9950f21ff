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
from typing import Any

from benchmarks import team_scaling as ts
from tasks.routing import lns, repair

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
    run_args = ts.parse(
        ["virtual", "--robots", "300", "--agents", str(args.agents), "--seeds", "1", "--time", args.seconds,
         "--at", "5", "--out", "/dev/null", *args.rest]
    )  # fmt: skip
    ts.warm_up(run_args)
    run = ts.virtual_run(run_args, args.agents, 1)
    print(" ".join(sys.argv[1:]))
    keys = ("final", "proposals", "accepted", "abandoned", "rejected_by_reason")
    print({k: run[k] for k in keys})
    for key, count in sorted(tally.items()):
        print(f"  {key}: {count}")


if __name__ == "__main__":
    main()
