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
