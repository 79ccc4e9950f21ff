"""The runtime is composed, not inherited (docs/architecture.md §8), and modules stay one job each.

- No class in the project has a chain of project base classes deeper than two.
- The service's collaborators inherit from nothing of ours and get what they use through their constructor.
- (A module over 400 lines says in its docstring why it is one job: ``test_layers.py``.)
- Forgetting a task is one call: nothing of it stays in the process's memory.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from coordinator.runtime.metrics import ServiceMetrics
from coordinator.runtime.service import CoordinatorService
from coordinator.runtime.wire import CreateTask, JoinRequest, ProposalIn
from coordinator.settings import ServiceSettings
from coordinator.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["coordinator", "agents", "tasks", "blockopt", "examples/jobshop/blockopt_jobshop"]
MAX_DEPTH = 2


def project_files(root: Path = ROOT) -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (root / pkg).rglob("*.py") if ".venv" not in p.parts)


def chains(files: list[Path]) -> dict[str, int]:
    """Class name -> how many project base classes lie above it on its longest chain (by name: the
    project's class names are unique enough for this, and a clash would only over-count)."""
    bases: dict[str, list[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                bases.setdefault(node.name, []).extend(n for n in names if n)

    def depth(name: str, seen: frozenset[str]) -> int:
        ours = [b for b in bases.get(name, []) if b in bases and b not in seen]
        return max((1 + depth(b, seen | {b}) for b in ours), default=0)

    return {name: depth(name, frozenset({name})) for name in bases}


def too_deep(files: list[Path]) -> dict[str, int]:
    return {name: d for name, d in chains(files).items() if d > MAX_DEPTH}


def test_no_class_has_a_chain_of_project_bases_deeper_than_two() -> None:
    assert too_deep(project_files()) == {}


def test_a_chain_of_three_is_caught(tmp_path: Path) -> None:
    (tmp_path / "chain.py").write_text(
        "class Core: ...\nclass Budgeting(Core): ...\n"
        "class Rounds(Budgeting): ...\nclass Service(Rounds): ...\n"
    )
    assert too_deep([tmp_path / "chain.py"]) == {"Service": 3}


def test_the_collaborators_inherit_nothing_and_take_their_parts_in_the_constructor() -> None:
    service = CoordinatorService(ServiceSettings(), MemoryStore(), ServiceMetrics(CollectorRegistry()))
    parts = {
        name: part
        for name, part in vars(service).items()
        if type(part).__module__.startswith("coordinator.runtime.") and name != "ctx"
    }
    assert {"cache", "events", "steps", "budgets", "rounds", "merges", "leases", "proposals"} <= set(parts)
    for name, part in parts.items():
        ours = [b for b in type(part).__mro__[1:] if b.__module__.split(".")[0] in {"coordinator", "tasks"}]
        assert ours == [], (name, ours)


@pytest.mark.anyio
async def test_forgetting_a_task_leaves_nothing_of_it_in_memory() -> None:
    service = CoordinatorService(ServiceSettings(), MemoryStore(), ServiceMetrics(CollectorRegistry()))
    params = {"blocks": 2, "dim": 2, "coupling": 0.3, "seed": 1}
    spec, join, _ = await service.create(CreateTask(kind="quadratic", params=params, mode="async"))
    joined = await service.join(spec.id, join, JoinRequest(name="a"))
    agent = await service.authenticate(spec.id, f"Bearer {joined.token}")
    grant = await service.lease(spec.id, agent)
    value = [0.0] * 2
    body = ProposalIn(
        lease_id=grant.lease_id, block=grant.block, base_version=grant.version, value=value,
        predicted_improvement=0.0,
    )  # fmt: skip
    await service.submit(spec.id, agent, body, wait=2.0)
    await service.view(spec.id)
    waiting = service.changed(spec.id)
    held = service.cache_sizes()
    assert held["tasks"] == held["specs"] == held["built"] == 1 and held["agents"] == 1
    service.forget(spec.id)
    await asyncio.wait_for(waiting.wait(), 1.0)  # its long polls are woken, to find it gone
    left = service.cache_sizes()
    assert {k: v for k, v in left.items() if k != "background"} == dict.fromkeys(
        left.keys() - {"background"}, 0
    )
    await service.close()
