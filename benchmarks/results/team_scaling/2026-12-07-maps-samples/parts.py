"""Where a replayed team's agent CPU goes, by part: thread CPU summed over every call of the LNS step
(``try_group``), ``put_back``, ``follow``, building a search, drawing neighbourhoods and ``propose`` itself
(nested parts overlap: ``follow`` runs inside ``_follow``, everything inside ``propose``).

    PYTHONPATH=. .venv/bin/python $L/parts.py SECONDS AGENTS SEED [OPTION...]   # from a checkout's root

(OPTIONs: more ``team_scaling virtual`` options, e.g. ``--param level_merges=true``.)

Not a product module; ``labrun.py`` is the team-scaling lab's shared replay (its parent folder).
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labrun import replay_once, thread_cpu  # noqa: E402

from tasks.routing import lns, repair  # noqa: E402

spent: collections.Counter[str] = collections.Counter()
calls: collections.Counter[str] = collections.Counter()


def main() -> None:
    search = repair.BlockSearch
    for name in ("try_group", "put_back", "follow", "__init__"):
        setattr(search, name, thread_cpu(spent, "search." + name, getattr(search, name), calls))
    for name in ("_neighbourhood", "_follow", "_table", "propose", "_read_robots", "_walk"):
        method = getattr(lns.RoutingProposer, name, None)  # (the last two: trees from 2026-12-07 on)
        if method is not None:
            setattr(lns.RoutingProposer, name, thread_cpu(spent, name, method, calls))
    try:  # reading a contract, in its own module from 53cd39d's successor on (_read_robots before)
        from tasks.routing.kept_contract import ContractReader

        ContractReader.read = thread_cpu(spent, "_read_robots", ContractReader.read, calls)  # type: ignore
    except ImportError:
        pass
    run = replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    total = sum(run["agent_cpu"])
    print(f"agent cpu {total:.1f}")
    for k, v in spent.most_common():
        print(f"  {k:24s} {v:8.2f} s {v / total:6.1%}  calls {calls[k]}")


if __name__ == "__main__":
    main()
