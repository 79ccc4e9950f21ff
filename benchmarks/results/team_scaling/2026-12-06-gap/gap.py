"""Lab probe (2026-12-06, gap): how stale is an answer when the coordinator meets it, and where the agent's
CPU between its contract and its answer goes. One virtual replay of random-32-32-10 k = 300
(``team_scaling``'s ``virtual_run``); not a product module.

    PYTHONPATH=. .venv/bin/python benchmarks/results/team_scaling/2026-12-06-gap/gap.py SECONDS AGENTS \
        [--seed S] [-- team_scaling virtual options...]

Prints, by the number of commits between an answer's base and the head it meets, how many answers and the
share refused; and per answer, the agent's CPU from lease to answer split into the contract's decode, the
search's set-up (table, follow), its LNS steps, and the put-back and encode.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.lib import virtual_team as vt
from tasks.routing import lns, repair

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # labrun.py, the team-scaling labs' helper
from labrun import print_refused_by_commits, replay_once  # noqa: E402

tally: collections.Counter[str] = collections.Counter()


def hook(rows: list[Any], split: list[Any]) -> None:
    on_submit = vt.Replay._on_submit

    async def submitted(self: Any, agent: Any, at: float, body: str) -> None:
        got = await self.service.store.get_head(self.task_id)
        head = got.version
        plans.setdefault(head, [tuple(c) for c in got.state["cells"]])
        before = dict(self.verdicts)
        await on_submit(self, agent, at, body)
        code = next((k for k, v in self.verdicts.items() if v != before.get(k, 0)), "?")
        after = await self.service.store.get_head(self.task_id)
        plans.setdefault(after.version, [tuple(c) for c in after.state["cells"]])
        sent = json.loads(body)
        base = plans.get(sent["base_version"])
        overlap = None
        if base is not None and len(sent["value"]) == len(base):
            now = plans[head]
            changed = {r for r, (a, b) in enumerate(zip(base, now, strict=True)) if a != b}
            written = {r for r, v in enumerate(sent["value"]) if v is not None}
            dearer = {r for r in written if len(sent["value"][r]) != len(base[r])}
            for r in dearer & changed:
                mine = tuple(y * 32 + x for x, y in sent["value"][r])
                same_path["same" if mine == now[r] else "other"] += 1
                if head - sent["base_version"] == 1:
                    ways = (
                        "answer "
                        + ("lower" if len(mine) < len(base[r]) else "higher")
                        + ", merge "
                        + (
                            "lower"
                            if len(now[r]) < len(base[r])
                            else "higher"
                            if len(now[r]) > len(base[r])
                            else "equal"
                        )
                    )
                    same_path[ways] += 1
                    age = next(
                        (
                            k
                            for k in range(1, 30)
                            if plans.get(sent["base_version"] - k) is not None
                            and plans[sent["base_version"] - k][r] != base[r]
                        ),
                        None,
                    )
                    same_path[f"changed {age if age is None or age < 6 else '6+'} commits before base"] += 1
            overlap = (
                "same robots" if written & changed else "other robots",
                "gain robot changed" if dearer & changed else "",
            )
        rows.append((code, head - sent["base_version"], sent["usage"]["seconds"], overlap))

    plans: dict[int, list[Any]] = {}
    same_path = tally

    async def leased(self: Any, agent: Any, at: float) -> None:
        got = await self.service.store.get_head(self.task_id)
        plans.setdefault(got.version, [tuple(c) for c in got.state["cells"]])
        await on_lease(self, agent, at)

    on_lease = vt.Replay._on_lease
    vt.Replay._on_lease = leased  # type: ignore[method-assign]

    vt.Replay._on_submit = submitted  # type: ignore[method-assign]

    spent: dict[str, float] = collections.defaultdict(float)
    for name in ("follow", "put_back", "try_group"):
        f = getattr(repair.BlockSearch, name)

        def timed(*a: Any, _f: Any = f, _n: str = name, **k: Any) -> Any:
            t = time.thread_time()
            try:
                return _f(*a, **k)
            finally:
                spent[_n] += time.thread_time() - t

        setattr(repair.BlockSearch, name, timed)
    propose = lns.RoutingProposer.propose

    def proposed(self: Any, contract: Any) -> Any:
        spent.clear()
        t = time.thread_time()
        draft = propose(self, contract)
        whole = time.thread_time() - t
        if draft is not None:
            split.append((whole, spent["follow"], spent["try_group"], spent["put_back"]))
        return draft

    lns.RoutingProposer.propose = proposed  # type: ignore[method-assign]

    call = vt.Replay._propose

    def timed_call(self: Any, agent: Any, grant_json: str, ready: float) -> None:
        t = time.thread_time()
        json.loads(grant_json)
        decode.append(time.thread_time() - t)
        call(self, agent, grant_json, ready)

    decode: list[float] = split_decode
    vt.Replay._propose = timed_call  # type: ignore[method-assign]


split_decode: list[float] = []


def share_variant(agents: int, mode: str) -> None:
    """Lab variant: agent i's ``agent`` neighbourhoods start from the most delayed robot among its share of
    the robots (robot r is agent (r mod N)'s; ``mode`` ``all``: falls back to every delayed robot when its
    share has none), so that no two agents chase one delayed robot."""
    from tasks.routing import destroy

    init = lns.RoutingProposer.__init__
    walk = destroy.random_walk_from_delayed
    current = {"agent": 0}

    def new_init(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        self._agent_index = kw.get("seed", 0) % 1000

    def shared_walk(
        grid: Any,
        paths: Any,
        starts: Any,
        goals: Any,
        k: int,
        rng: Any,
        tabu: set[int],
        index: Any,
        spares: Any = (1, 0),
    ) -> list[int]:
        i = current["agent"]
        d = destroy.delays(grid, paths, starts, goals)
        order = sorted((r for r in range(len(paths)) if d[r] > 0 and r % agents == i), key=lambda r: -d[r])
        pick = next((r for r in order if r not in tabu), None)
        if pick is None and order:
            tabu.difference_update(order)
            pick = order[0]
        if pick is None:
            return walk(grid, paths, starts, goals, k, rng, tabu, index, spares) if mode == "all" else []
        tabu.add(pick)
        return destroy.walk_from(grid, paths[pick], goals[pick], [pick], k, rng, index, spares)

    neighbourhood = lns.RoutingProposer._neighbourhood

    def new_neighbourhood(self: Any, *a: Any, **kw: Any) -> Any:
        current["agent"] = getattr(self, "_agent_index", 0)
        return neighbourhood(self, *a, **kw)

    lns.RoutingProposer.__init__ = new_init  # type: ignore[method-assign]
    lns.RoutingProposer._neighbourhood = new_neighbourhood  # type: ignore[method-assign]
    lns.GENERATORS["agent"] = shared_walk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("seconds")
    parser.add_argument("agents", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--share", choices=("own", "all"))
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args()
    if args.share and args.agents > 1:
        share_variant(args.agents, args.share)
    rows: list[Any] = []
    split: list[Any] = []
    hook(rows, split)
    replay_once(args.seconds, args.agents, args.seed, args.rest)
    print_refused_by_commits((code, gap) for code, gap, _took, _overlap in rows)
    by_overlap: dict[Any, list[str]] = collections.defaultdict(list)
    for code, gap, _took, overlap in rows:
        if gap > 0 and overlap is not None:
            by_overlap[overlap].append(code)
            by_overlap[overlap[0]].append(code)
            by_overlap[(f"gap {min(gap, 3)}",) + overlap].append(code)
    for key, codes in sorted(by_overlap.items(), key=str):
        refused = sum(c != "merged" for c in codes) / len(codes)
        print(f"  stale answers, {key}: {len(codes)}, {refused:.0%} refused")
    print("  a gain robot's path in the answer against the head's:", dict(tally))
    if split:
        ms = [[1000 * x for x in col] for col in zip(*split, strict=True)]
        names = ("propose", "follow", "LNS steps", "put_back")
        for what, f in (("median", statistics.median), ("mean", statistics.mean)):
            print(f"  per answer, {what} ms:", {n: round(f(c), 1) for n, c in zip(names, ms, strict=True)})
    if split_decode:
        print(f"  contract decode: median {1000 * statistics.median(split_decode):.1f} ms")


if __name__ == "__main__":
    main()
