"""Headless Chromium for the web UI's tests: Debian's `chromium` and `chromium-driver` driven by selenium
(``benchmarks.lib.browser``, which the frame benchmark shares).

Without them the tests skip, naming the packages; with ``BLOCKOPT_REQUIRE_BROWSER=1`` (CI) they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.lib.browser import Browser, find_executables


def executables() -> tuple[str, str]:
    try:
        return find_executables()
    except LookupError as exc:
        if os.environ.get("BLOCKOPT_REQUIRE_BROWSER") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture
def browser() -> Iterator[Browser]:
    chromium, driver = executables()
    b = Browser(chromium, driver)
    try:
        yield b
    finally:
        b.close()


ARTIFACTS = Path(os.environ.get("BLOCKOPT_ARTIFACTS", "out/test-artifacts"))
"""Screenshots the browser tests save (relative to the working directory)."""
