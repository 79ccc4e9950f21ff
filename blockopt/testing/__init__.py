"""Contract suites shipped in the wheel: a plugin's own tests check its kind (or store backend) with them.

    from blockopt.testing import Kit, TaskContract, kit_for   # a task kind (``tasks.Task``)
    from blockopt.testing.stores import StoreContract         # a store (``coordinator.store.Store``)

They need the ``dev`` extra (pytest, hypothesis). Register them for pytest's assertion rewriting in the
plugin's ``conftest.py`` to get its detailed failure messages::

    pytest.register_assert_rewrite("blockopt.testing")
"""

from blockopt.testing.tasks import Kit, TaskContract, kit_for

__all__ = ["Kit", "TaskContract", "kit_for"]
