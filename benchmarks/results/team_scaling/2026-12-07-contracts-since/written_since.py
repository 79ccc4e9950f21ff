"""How a replayed team's contracts came: written since the agent's kept one, or whole, their sizes (the data's
compact JSON, median), and the versions between an agent's two leases (the coordinator keeps 32 heads: older
ones are written whole). The sizes are measured inside the agents' calls: not a run to read times from.

    PYTHONPATH=. .venv/bin/python $C/written_since.py SECONDS AGENTS SEED [OPTION...]   # from a checkout

Not a product module; ``labrun.py`` is the team-scaling lab's shared replay (its parent folder).
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labrun import replay_once  # noqa: E402

from tasks.routing import kept_contract  # noqa: E402

came: collections.Counter[str] = collections.Counter()
sizes: dict[str, list[int]] = collections.defaultdict(list)
gaps: list[int] = []


def main() -> None:
    read = kept_contract.ContractReader.read

    def counted(self: kept_contract.ContractReader, contract: Any) -> Any:
        kept = self.version
        how = "since" if "since" in contract else "whole"
        came[how] += 1
        sizes[how].append(len(json.dumps(contract["data"], separators=(",", ":"))))
        if kept is not None:
            gaps.append(int(contract["version"]) - kept)
        return read(self, contract)

    kept_contract.ContractReader.read = counted  # type: ignore[method-assign]
    replay_once(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    print(dict(came), {how: f"median {statistics.median(n) / 1000:.1f} KB" for how, n in sizes.items()})
    if gaps:
        q = statistics.quantiles(gaps, n=20)
        middle, most = statistics.median(gaps), max(gaps)
        print(f"versions between an agent's leases: median {middle}, 95th {q[-1]}, max {most}")


if __name__ == "__main__":
    main()
