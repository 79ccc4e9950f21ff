"""This folder's scripts share the 2026-12-06-heap folder's helpers (the k = 300 replay config), loaded from
there rather than copied: the scripts run as files, so this module is found beside them."""

import importlib.util
from pathlib import Path

_HEAP_LAB = Path(__file__).parents[1] / "2026-12-06-heap" / "lab.py"
_spec = importlib.util.spec_from_file_location("heap_lab", _HEAP_LAB)
assert _spec is not None and _spec.loader is not None
_heap_lab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_heap_lab)

routing_config = _heap_lab.routing_config


def walk(search, proposer, seconds):
    """``search``'s LNS steps for ``seconds`` of thread CPU: the proposer's neighbourhoods, its ALNS wheel
    rewarded as ``propose`` rewards it, a step kept when the sum of costs does not grow."""
    import time

    rng, starts, goals = proposer.rng, search.starts, search.goals
    t0 = time.thread_time()
    while time.thread_time() - t0 < seconds:
        group, generator = proposer._neighbourhood(search, [], starts, goals)
        rng.shuffle(group)
        before = search.soc
        _kept, _collisions, trial = search.try_group(group, None)
        if generator in proposer.wheel.weights:
            proposer.wheel.reward(generator, (before - trial) / len(group))


def merge_changes(search_class, table_class, grid, starts, goals, max_len, head, changes, mode):
    """The changes of a round (each robot -> its new path, after ``put_back``) merged onto ``head`` one at a
    time by ``mode``: ``gain`` / ``sideways`` merge a change whole only when it shortens the head (or keeps it
    equal) and nothing collides; ``-fit`` first puts back to the head's paths its robots that collide, until
    nothing does (what fits is kept, as the coordinator's rebase keeps it). (new head, merged, offered)."""
    probe = search_class(grid, starts, goals, head, table_class(grid.n_cells), max_len)
    merged = offered = 0
    for delta in changes:
        delta = {i: p for i, p in delta.items() if p != probe.paths[i]}
        if not delta:
            continue
        offered += 1
        old = {i: probe.paths[i] for i in delta}
        before = probe.soc
        probe._replace(delta)
        while mode.endswith("-fit") and probe.collisions:  # keep what fits: colliding robots go back
            hit = probe._colliding_with(delta)
            back = {i: old[i] for i in hit if i in old and probe.paths[i] != old[i]}
            if not back:
                break
            probe._replace(back)
        worse = probe.soc > before or (mode.startswith("gain") and probe.soc == before)
        if probe.collisions or worse:
            probe._replace(old)
        else:
            merged += 1
    return list(probe.paths), merged, offered


class Searcher:
    """One search of a modelled team (``shared_walk.py``, ``../2026-12-07-ideal-team/ideal_team.py``): its own
    rng and the proposer's neighbourhoods and wheel, on ``paths``; ``on`` is the head it follows."""

    def __init__(self, grid, max_len, starts, goals, paths, seed):
        import random

        from tasks.routing.lns import RoutingProposer
        from tasks.routing.repair import BlockSearch
        from tasks.routing.reservations import Reservations

        self.rng = random.Random(seed)
        self.proposer = RoutingProposer(grid, time_budget=1.0, neighbourhood=8, max_len=max_len, seed=seed)
        self.proposer.rng = self.rng
        table = Reservations(grid.n_cells)
        self.search = BlockSearch(grid, starts, goals, paths, table, max_len, rng=self.rng)
        self.on = list(paths)

    def run(self, seconds):
        walk(self.search, self.proposer, seconds)
