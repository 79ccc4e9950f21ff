"""Lab probe (2026-12-06): where a team's LNS steps go. One virtual replay (``benchmarks.team_scaling``'s
``virtual_run``) of random-32-32-10 k = 300, seed 1 unless ``--seed`` says another, with one probe hooked in;
prints the run's totals and the probe's tally. Not a product module: it wraps functions of the tree it
runs in.

    L=benchmarks/results/team_scaling/2026-12-06-losses
    PYTHONPATH=. .venv/bin/python $L/probe.py PROBE SECONDS AGENTS [--seed S] [--pivot uniform|weighted] \
        [--tiles T] [--unsalted] [-- team_scaling virtual options...]

Probes:
- ``cpu``: agent CPU per function (thread time): propose, try_group (the LNS steps), follow, put_back and
  colliding.
- ``answers``: per answer, the robots written at equal cost (a walk the put-back could not undo) and at
  another cost, and the robots put back.
- ``windows``: each answer's search seconds (its base's age when it left) against its verdict.
- ``refusals``: each stale answer as the coordinator's rebase met it (fits / collided, kept a gain or not;
  its robots' cost change against the head), the head robots it collides with (changed since its base at
  equal cost, at another cost, unchanged), and whether giving those changed at equal cost their base paths
  back, where they fit, would have left a gain.

Lab variants of the ``agent`` neighbourhood's first robot (``--pivot``: a random delayed robot, or one drawn
in proportion to its delay, instead of the most delayed) and of every team neighbourhood (``--tiles T``: agent
i draws its first robot from the robots starting in tile i mod T² of a T x T split of the map).
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.lib import virtual_team as vt
from coordinator.runtime import window as win
from tasks.routing import destroy, lns, rebase, repair
from tasks.routing.destroy import delays, walk_from
from tasks.routing.occupancy import cost

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # labrun.py, the team-scaling labs' helper
from labrun import replay_once  # noqa: E402

Tally = collections.Counter[Any]


def probe_cpu(tally: Tally) -> None:
    spent: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])

    def timed(cls: Any, name: str) -> None:
        f = getattr(cls, name)

        @functools.wraps(f)
        def g(*a: Any, **k: Any) -> Any:
            t = time.thread_time()
            try:
                return f(*a, **k)
            finally:
                e = spent[name]
                e[0] += 1
                e[1] += time.thread_time() - t

        setattr(cls, name, g)

    for name in ("follow", "put_back", "try_group", "colliding"):
        timed(repair.BlockSearch, name)
    timed(lns.RoutingProposer, "propose")
    tally["_spent"] = spent


def probe_answers(tally: Tally) -> None:
    rows = tally.setdefault("_rows", [])
    propose = lns.RoutingProposer.propose

    def wrapped(self: Any, contract: Any) -> Any:
        draft = propose(self, contract)
        if draft is not None:
            robots = contract["data"]["robots"]
            written = [(v, r["path"]) for r, v in zip(robots, draft.value, strict=True) if v is not None]
            same = sum(len(v) == len(p) for v, p in written)
            rows.append((same, len(written) - same, draft.info.get("put_back", 0)))
        return draft

    lns.RoutingProposer.propose = wrapped  # type: ignore[method-assign]


def probe_windows(tally: Tally) -> None:
    rows = tally.setdefault("_rows", [])
    replay = next(c for c in vars(vt).values() if isinstance(c, type) and hasattr(c, "_on_submit"))
    on_submit = replay._on_submit

    async def wrapped(self: Any, agent: Any, at: float, body: str) -> None:
        before = dict(self.verdicts)
        await on_submit(self, agent, at, body)
        code = next((k for k, v in self.verdicts.items() if v != before.get(k, 0)), "?")
        rows.append((code, json.loads(body)["usage"]["seconds"]))

    replay._on_submit = wrapped


def probe_refusals(tally: Tally) -> None:
    by_version: dict[int, list[Any]] = {}
    base: dict[str, int] = {}
    score_arrival = win.score_arrival

    def scored(engine: Any, snap: Any, p: Any, index: int, keep: Any = None) -> Any:
        by_version[snap.version] = list(snap.state.paths)
        base["version"] = p.base_version
        return score_arrival(engine, snap, p, index, keep)

    win.score_arrival = scored
    rebase_ = rebase.Rebaser.rebase

    def wrapped(self: Any, state: Any, robots: Any, value: Any, seconds: float, rng: Any) -> Any:
        written = {r: p for r, p in zip(robots, value, strict=True) if p is not None}
        gains = [cost(p) - cost(state.paths[r]) for r, p in written.items()]
        _kept, collided = rebase.keep_what_fits(state.index, state.paths, written) if written else ({}, False)
        out = rebase_(self, state, robots, value, seconds, rng)
        verdict = "kept a gain" if out is not None else "no gain"
        against_head = "gains on the head" if sum(gains) < 0 else "no gain on the head"
        tally[("collided" if collided else "fits", verdict, against_head)] += 1
        then = by_version.get(base.get("version", -1))
        if then is None or not collided:
            return out
        hit = {q for r, p in written.items() for q in state.index.colliders(r, p) if q not in written}
        kinds = {_change(then[q], state.paths[q]) for q in hit}
        tally[("head robots in the way", verdict, " + ".join(sorted(kinds)))] += 1
        if out is None:
            tally[("give way", _give_way(state, written, hit, then))] += 1
        return out

    rebase.Rebaser.rebase = wrapped  # type: ignore[method-assign]


def _change(then: Any, now: Any) -> str:
    return "unchanged" if then == now else "equal cost" if len(then) == len(now) else "another cost"


def _give_way(state: Any, written: dict[int, Any], hit: set[int], then: list[Any]) -> str:
    """Whether the refused answer would gain if the head robots in its way that changed at equal cost since
    its base took their base paths again (each where it fits the head)."""
    index, paths, moved = state.index.copy(), list(state.paths), 0
    for q in hit:
        b, h = then[q], state.paths[q]
        if b != h and len(b) == len(h):
            index.remove(q, h)
            fits = not (index.colliders(q, b) - set(written))
            index.add(q, b if fits else h)
            if fits:
                paths[q], moved = b, moved + 1
    if not moved:
        return "nothing to give"
    kept, _ = rebase.keep_what_fits(index, paths, written)
    return "gains" if sum(cost(p) - cost(paths[r]) for r, p in kept.items()) < 0 else "still no gain"


def pivot_variant(how: str) -> None:
    def spread(
        grid: Any, paths: Any, starts: Any, goals: Any, k: int, rng: Any, tabu: set[int], index: Any
    ) -> Any:
        d = delays(grid, paths, starts, goals)
        pool = [i for i in range(len(paths)) if d[i] > 0 and i not in tabu] or [
            i for i in range(len(paths)) if d[i] > 0
        ]
        if not pool:
            return []
        pick = rng.choices(pool, weights=[d[i] for i in pool])[0] if how == "weighted" else rng.choice(pool)
        tabu.add(pick)
        return walk_from(grid, paths[pick], goals[pick], [pick], k, rng, index)

    destroy.GENERATORS["agent"] = spread


def tiles_variant(tiles: int) -> None:
    init, neighbourhood, propose = (
        lns.RoutingProposer.__init__, lns.RoutingProposer._neighbourhood, lns.RoutingProposer.propose,
    )  # fmt: skip

    def tile(grid: Any, cell: int) -> int:
        x, y = cell % grid.width, cell // grid.width
        return (y * tiles // grid.height) * tiles + x * tiles // grid.width

    def new_init(self: Any, grid: Any, **kw: Any) -> None:
        init(self, grid, **kw)
        self._index_in_team = kw.get("seed", 0) % 1000  # agents/fleet.py: seed * 1000 + i

    def new_neighbourhood(self: Any, search: Any, conflicted: Any, starts: Any, goals: Any) -> Any:
        if conflicted or not self._team:
            return neighbourhood(self, search, conflicted, starts, goals)
        grid, paths, rng = self.grid, search.paths, self.rng
        home = [i for i, s in enumerate(starts) if tile(grid, s) == self._index_in_team % (tiles * tiles)]
        if not home:
            return neighbourhood(self, search, conflicted, starts, goals)
        k, name = min(self.neighbourhood, len(paths)), self.wheel.choose(rng)
        d = delays(grid, paths, starts, goals)
        late = sorted((i for i in home if d[i] > 0 and i not in self._tabu), key=lambda i: -d[i])
        pick = late[0] if name == "agent" and late else rng.choice(home)
        self._tabu.add(pick)
        group = walk_from(grid, paths[pick], goals[pick], [pick], k, rng, search.index)
        group += rng.sample([j for j in range(len(paths)) if j not in set(group)], k - len(group))
        return group, name

    def new_propose(self: Any, contract: Any) -> Any:
        self._team = bool(contract["data"].get("answer_on_gain"))
        return propose(self, contract)

    lns.RoutingProposer.__init__ = new_init  # type: ignore[method-assign]
    lns.RoutingProposer._neighbourhood = new_neighbourhood  # type: ignore[method-assign]
    lns.RoutingProposer.propose = new_propose  # type: ignore[method-assign]


def unsalted_variant() -> None:
    """Every search without salted ties (``BlockSearch``'s rng None): re-plans keep SIPP's fixed tie-break, so
    searches walk no plateau and answers carry no equal-cost sidesteps."""
    init = repair.BlockSearch.__init__

    def new_init(self: Any, *a: Any, **kw: Any) -> None:
        kw.pop("rng", None)
        init(self, *a, **kw)

    repair.BlockSearch.__init__ = new_init  # type: ignore[method-assign]


def report(probe: str, tally: Tally) -> None:
    rows = tally.pop("_rows", [])
    spent = tally.pop("_spent", {})
    for name, (calls, seconds) in sorted(spent.items(), key=lambda x: -x[1][1]):
        each = 1000 * seconds / max(calls, 1)
        print(f"  {name:10s} {calls:7d} calls {seconds:8.2f} s {each:7.2f} ms a call")
    if probe == "answers" and rows:
        for i, what in enumerate(("written at equal cost", "written at another cost", "put back")):
            values = [r[i] for r in rows]
            print(f"  {what}: median {statistics.median(values)}, mean {statistics.mean(values):.1f}")
    if probe == "windows" and rows:
        for lo, hi in ((0, 0.02), (0.02, 0.05), (0.05, 0.1), (0.1, 0.2), (0.2, 0.5), (0.5, 1e9)):
            inside = [code for code, took in rows if lo <= took < hi]
            if inside:
                refused = sum(code != "merged" for code in inside) / len(inside)
                print(f"  search {lo}-{hi} s: {len(inside)} answers, {refused:.0%} refused")
    for key, count in sorted(tally.items(), key=str):
        print(f"  {key}: {count}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("probe", choices=("cpu", "answers", "windows", "refusals", "none"))
    parser.add_argument("seconds")
    parser.add_argument("agents", type=int)
    parser.add_argument("--pivot", choices=("uniform", "weighted"))
    parser.add_argument("--tiles", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--unsalted", action="store_true")
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args()
    tally: Tally = collections.Counter()
    if args.probe != "none":
        globals()[f"probe_{args.probe}"](tally)
    if args.pivot:
        pivot_variant(args.pivot)
    if args.tiles:
        tiles_variant(args.tiles)
    if args.unsalted:
        unsalted_variant()
    replay_once(args.seconds, args.agents, args.seed, args.rest)
    report(args.probe, tally)


if __name__ == "__main__":
    main()
