"""Headless Chromium driven by selenium (Debian's `chromium` and `chromium-driver`), for the web UI's
frame benchmark and its browser tests."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

INSTALL_HINT = "apt-get install -y chromium chromium-driver"
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1500",
    # no route out: every host but the loopback one fails to resolve
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


def find_executables() -> tuple[str, str]:
    """Debian's ``chromium`` and ``chromedriver``; a missing one raises ``LookupError`` naming them."""
    chromium = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    driver = shutil.which("chromedriver") or (
        "/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None
    )
    if chromium is None or driver is None:
        missing = " and ".join(
            n for n, p in (("chromium", chromium), ("chromium-driver", driver)) if p is None
        )
        raise LookupError(f"no headless browser: install the Debian package(s) {missing} ({INSTALL_HINT})")
    return chromium, driver


class Browser:
    """A selenium Chrome session with the console log kept, and small waits that poll (no fixed sleeps)."""

    def __init__(self, chromium: str, driver_path: str) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in FLAGS:
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(driver_path), options=options)
        self.driver.set_page_load_timeout(60)
        self.console: list[dict[str, Any]] = []

    def open(self, url: str) -> None:
        self.driver.get(url)

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def text(self, selector: str) -> str:
        return str(
            self.js(
                "const n = document.querySelector(arguments[0]); return n ? n.textContent : '';", selector
            )
        )

    def count(self, selector: str) -> int:
        return int(self.js("return document.querySelectorAll(arguments[0]).length;", selector))

    def visible(self, selector: str) -> bool:
        return bool(
            self.js(
                "const n = document.querySelector(arguments[0]); return !!n && !n.hidden && "
                "n.offsetParent !== null;",
                selector,
            )
        )

    def set_token(self, token: str) -> None:
        self.js(
            "const i = document.getElementById('token-input'); i.value = arguments[0];"
            "document.getElementById('token-form').requestSubmit();",
            token,
        )

    def wait(self, pred: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = pred()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(every)

    def logs(self) -> list[dict[str, Any]]:
        self.console += self.driver.get_log("browser")
        return self.console

    def errors(self) -> list[str]:
        return [str(e["message"]) for e in self.logs() if e.get("level") == "SEVERE"]

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(path))
        return path

    def close(self) -> None:
        self.driver.quit()
