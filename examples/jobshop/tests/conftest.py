import pytest

pytest.register_assert_rewrite("blockopt.testing")  # the contract suite shipped in blockopt's wheel
