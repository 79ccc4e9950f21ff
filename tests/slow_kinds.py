"""Test-only kinds whose preparation is slow: the quadratic with a reference that sleeps in Python, spins in
CP-SAT, or fails after a while, or a slow warm-up. Installed for one test through a plugin site
(``plugin_site``)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

from ortools.sat.python import cp_model
from pydantic import Field

from tasks.base import Reference
from tasks.quadratic import QuadraticParams, QuadraticTask


class SlowParams(QuadraticParams):
    prepare_seconds: float = Field(5.0, ge=0, description="seconds the reference takes")


class SleepyQuadratic(QuadraticTask):
    """The reference sleeps in Python (an HTTP call, a file read): the interpreter lock is free meanwhile."""

    kind = "sleepy-quadratic"
    Params = SlowParams

    def reference(self) -> Reference:
        time.sleep(self.params.prepare_seconds)  # type: ignore[attr-defined]
        return super().reference()


class SpinningQuadratic(QuadraticTask):
    """The reference runs CP-SAT on a market-split model (hard: it spins to its time limit)."""

    kind = "spinning-quadratic"
    Params = SlowParams

    def reference(self) -> Reference:
        status = market_split(self.params.prepare_seconds)  # type: ignore[attr-defined]
        assert status == "UNKNOWN", status  # it spun to the limit: neither solved nor refuted
        return super().reference()


class FailingQuadratic(QuadraticTask):
    """The reference raises after a while (a solver that crashed, a data file that went missing)."""

    kind = "failing-quadratic"
    Params = SlowParams

    def reference(self) -> Reference:
        time.sleep(self.params.prepare_seconds)  # type: ignore[attr-defined]
        raise RuntimeError("the reference solver crashed")


class WarmingQuadratic(QuadraticTask):
    """The kind warms up slowly (compiling kernels on a fresh install) and has nothing else slow."""

    kind = "warming-quadratic"
    Params = SlowParams

    def warm_up(self) -> None:
        time.sleep(self.params.prepare_seconds)  # type: ignore[attr-defined]


def market_split(seconds: float, n: int = 40, rows: int = 5) -> str:
    """Cornuéjols-Dawande market split with one worker, fixed seed, ``seconds`` limit: CP-SAT's status."""
    rng = random.Random(0)
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{i}") for i in range(n)]
    for _ in range(rows):
        a = [rng.randint(0, 99) for _ in range(n)]
        model.add(sum(ai * xi for ai, xi in zip(a, x, strict=True)) == sum(a) // 2)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 1
    return str(solver.status_name(solver.solve(model)))


KINDS = {
    "sleepy-quadratic": "SleepyQuadratic",
    "spinning-quadratic": "SpinningQuadratic",
    "failing-quadratic": "FailingQuadratic",
    "warming-quadratic": "WarmingQuadratic",
}


def write_site(root: Path) -> Path:
    """A directory that, on sys.path, holds an installed distribution with these kinds as entry points."""
    site = root / "slow-site"
    info = site / "slow_kinds_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: slow-kinds-plugin\nVersion: 0.1\n")
    entries = "\n".join(f"{kind} = tests.slow_kinds:{cls}" for kind, cls in KINDS.items())
    (info / "entry_points.txt").write_text(f"[blockopt.tasks]\n{entries}\n")
    return site


def installed(root: Path) -> Iterator[Path]:
    """Install the kinds in this process while the generator is open (a fixture's body)."""
    import sys

    from tasks import registry

    site = write_site(root)
    sys.path.insert(0, str(site))
    registry.refresh()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        registry.refresh()
