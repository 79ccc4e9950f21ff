"""The job-shop kind against blockopt's task contract suite, imported from the installed package
(``blockopt.testing``), as any plugin's own tests do: no blockopt source tree on the path."""

from __future__ import annotations

import pytest

from blockopt.testing import Kit, TaskContract, kit_for


@pytest.fixture(scope="module")
def kit() -> Kit:
    return kit_for("jobshop", {"instance": "ft06"})


class TestJobShop(TaskContract):
    pass
