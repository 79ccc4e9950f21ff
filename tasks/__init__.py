"""Problem kinds, and what a kind author needs to write one (the SDK).

A kind is a ``Task`` subclass registered under the entry-point group
``blockopt.tasks`` (the built-in ones in this project's ``pyproject.toml``, an
external one in its own package's); nothing else in blockopt changes. See the
README, "Writing a task kind", and ``examples/jobshop/``. A kind writes the ``Task`` core;
what it may offer beyond it are the protocols of ``tasks.capabilities``.
"""

from __future__ import annotations

from tasks import capabilities
from tasks.base import (
    COMMON_REJECTION_CODES,
    OUTSIDE_LEASE,
    RUNNER_OPTIONS,
    Draft,
    InvalidProposal,
    NoKnobs,
    Proposer,
    Reference,
    Task,
)
from tasks.prompt import KindPrompt
from tasks.registry import (
    InvalidParams,
    KindRefused,
    UnknownKind,
    broken_kinds,
    create_task,
    kind_class,
    kind_sources,
    kinds,
)

__all__ = [
    "COMMON_REJECTION_CODES",
    "OUTSIDE_LEASE",
    "RUNNER_OPTIONS",
    "Draft",
    "InvalidParams",
    "InvalidProposal",
    "KindPrompt",
    "KindRefused",
    "NoKnobs",
    "Proposer",
    "Reference",
    "Task",
    "UnknownKind",
    "broken_kinds",
    "capabilities",
    "create_task",
    "kind_class",
    "kind_sources",
    "kinds",
]
