"""Job-shop instances: Fisher and Thompson's ft06 and Taillard's 15x15 instances from his generator.

Taillard, "Benchmarks for basic scheduling problems", EJOR 64 (1993): processing times
and machine orders come from a portable linear congruential generator and two seeds
per instance, so the instances are regenerated here rather than shipped.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Instance:
    name: str
    routes: tuple[tuple[tuple[int, int], ...], ...]
    """routes[j] = ((machine, duration), ...) in job j's technological order."""
    published_optimum: int | None = None
    """The proven optimum reported in the literature (checked by the tests, never used as the reference)."""

    @property
    def n_jobs(self) -> int:
        return len(self.routes)

    @property
    def n_machines(self) -> int:
        return 1 + max(m for route in self.routes for m, _ in route)

    def jobs_on(self, machine: int) -> list[int]:
        return [j for j, route in enumerate(self.routes) if any(m == machine for m, _ in route)]

    def trivial_bound(self) -> int:
        """Taillard's lower bound: the longest job or the most loaded machine."""
        loads = [0] * self.n_machines
        for route in self.routes:
            for m, d in route:
                loads[m] += d
        return max(max(loads), max(sum(d for _, d in route) for route in self.routes))


FT06 = Instance(
    "ft06",
    tuple(
        tuple((row[i], row[i + 1]) for i in range(0, len(row), 2))
        for row in (
            (2, 1, 0, 3, 1, 6, 3, 7, 5, 3, 4, 6),
            (1, 8, 2, 5, 4, 10, 5, 10, 0, 10, 3, 4),
            (2, 5, 3, 4, 5, 8, 0, 9, 1, 1, 4, 7),
            (1, 5, 0, 5, 2, 5, 3, 3, 4, 8, 5, 9),
            (2, 9, 1, 3, 4, 5, 5, 4, 0, 3, 3, 1),
            (1, 3, 3, 3, 5, 9, 0, 10, 4, 4, 2, 1),
        )
    ),
    published_optimum=55,
)

TAILLARD_15X15 = {
    # name: (time seed, machine seed, proven optimum), from Taillard (1993) and the OR-Library's jobshop2.txt
    "ta01": (840612802, 398197754, 1231),
    "ta02": (1314640371, 386720536, 1244),
    "ta03": (1227221349, 316176388, 1218),
    "ta04": (342269428, 1806358582, 1175),
    "ta05": (1603221416, 1501949241, 1224),
    "ta06": (1357584978, 1734077082, 1238),
    "ta07": (44531661, 1374316395, 1227),
    "ta08": (302545136, 2092186050, 1217),
    "ta09": (1153780144, 1393392374, 1274),
    "ta10": (73896786, 1544979948, 1241),
}


class TaillardRandom:
    """Taillard's generator: the minimal-standard LCG (Park and Miller) in Schrage's form, as published."""

    M, A, B, C = 2147483647, 16807, 127773, 2836

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def unif(self, low: int, high: int) -> int:
        k = self.seed // self.B
        self.seed = self.A * (self.seed % self.B) - k * self.C
        if self.seed < 0:
            self.seed += self.M
        return low + int(self.seed / self.M * (high - low + 1))


def taillard(
    jobs: int, machines: int, time_seed: int, machine_seed: int, name: str, optimum: int | None = None
) -> Instance:
    times_rng, machines_rng = TaillardRandom(time_seed), TaillardRandom(machine_seed)
    times = [[times_rng.unif(1, 99) for _ in range(machines)] for _ in range(jobs)]
    order = [list(range(machines)) for _ in range(jobs)]
    for j in range(jobs):
        for k in range(machines):
            swap = machines_rng.unif(k, machines - 1)
            order[j][k], order[j][swap] = order[j][swap], order[j][k]
    routes = tuple(tuple(zip(order[j], times[j], strict=True)) for j in range(jobs))
    return Instance(name, routes, published_optimum=optimum)


def load(name: str) -> Instance:
    """``ft06`` or ``ta01``..``ta10``; a ValueError names the known instances."""
    if name == "ft06":
        return FT06
    if name in TAILLARD_15X15:
        time_seed, machine_seed, optimum = TAILLARD_15X15[name]
        return taillard(15, 15, time_seed, machine_seed, name, optimum)
    raise ValueError(f"unknown instance {name!r} (known: ft06, {', '.join(TAILLARD_15X15)})")
