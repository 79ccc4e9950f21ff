"""Problem kinds. Each module (or package) here that defines a ``TASK`` class is a kind.

A new kind is one new module exposing ``TASK = MyTask`` (a ``tasks.base.Task``
subclass); nothing else in the project changes.
"""

from __future__ import annotations

from tasks.registry import create_task, kind_class, kinds

__all__ = ["create_task", "kind_class", "kinds"]
