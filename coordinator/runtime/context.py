"""What every part of the runtime shares: settings, store, metrics, clock, and this process's place.

One object handed to each collaborator's constructor (``docs/architecture.md`` §8), instead of a base
class that every part inherits: a part names what it uses, and a test builds one part with a fake store.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coordinator.runtime.metrics import ServiceMetrics
from coordinator.settings import ServiceSettings
from coordinator.store.base import Store

if TYPE_CHECKING:
    from coordinator.store.bus import Bus


def new_owner() -> str:
    """This process's name as a round-lock owner and round runner: host and pid first, so an operator
    (or a fault test) sees who holds a lock."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class ServiceContext:
    settings: ServiceSettings
    """Replaced, not edited, when a setting turns out not to apply (``Scheduler`` on a store that cannot
    delete): every part reads it through the context, so all see the change."""
    store: Store
    metrics: ServiceMetrics
    clock: Callable[[], float] = time.time
    owner: str = field(default_factory=new_owner)
    rounds_here: bool = True
    """False on an API process of the split mode: rounds, lease expiry and budgets run elsewhere."""
    bus: Bus | None = None
    """Tells other processes of a proposal queued (API) or a task changed (engine); set by
    ``coordinator/api/worker.py`` and ``coordinator/runtime/engine_worker.py``."""
