"""The task contract suite (``blockopt/testing/tasks.py``) over every installed kind, on its ``example``."""

from __future__ import annotations

import pytest

from blockopt.testing import Kit, TaskContract, kit_for
from tasks import kinds


@pytest.fixture(scope="module", params=sorted(kinds()))
def kit(request: pytest.FixtureRequest) -> Kit:
    return kit_for(request.param)


class TestEveryInstalledKind(TaskContract):
    pass


def test_the_suite_covers_the_built_in_kinds_and_the_example_plugin() -> None:
    """make install-dev installs examples/jobshop, so a fresh clone checks all four."""
    assert {"quadratic", "routing", "sqlplan", "jobshop"} <= set(kinds())
