"""A real headless Chromium for the tests of exported pages and of `sessdex serve`.

Debian's `chromium` and `chromium-driver` (installed by scripts/test), driven through Selenium with the system
chromedriver: nothing is downloaded. The flags keep Chromium from reaching for the network (the machine has
none) and give each browser a fresh, private profile folder.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def browser_binaries() -> tuple[str, str]:
    """The paths of chromium and chromedriver; fails the test (never skips) when either is missing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.fail("the browser tests need Debian's chromium and chromium-driver (installed by scripts/test)")
    return chromium, driver


@contextmanager
def headless_chromium(width: int = 1280, height: int = 900) -> Iterator[object]:
    """A Selenium WebDriver on a headless Chromium with an empty profile; quit (and its folder removed) on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = browser_binaries()
    profile = tempfile.mkdtemp(prefix="sessdex-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)
