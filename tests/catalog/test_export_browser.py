"""An exported page in a real headless Chromium: planted script never runs, details start closed, the stored image
shows from its data URI, nothing is fetched and the console stays clean."""

from __future__ import annotations

from pathlib import Path

from selenium.webdriver.common.by import By

from tests.browser_support import headless_chromium
from tests.catalog.test_export import SESSION_ID, hostile_records, sessdex
from tests.core.sessiontree import BASE_MS, make_tree


def test_exported_page_in_chromium(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    tree.session(tree.project("proj"), SESSION_ID, hostile_records(tree), mtime_ms=BASE_MS)
    page = tmp_path / "export.html"
    done = sessdex(tree, "export", "ab12", "--all-branches", "-o", str(page))
    assert done.returncode == 0, done.stderr
    with headless_chromium() as browser:
        browser.get(page.as_uri())  # type: ignore[attr-defined]
        run = browser.execute_script  # type: ignore[attr-defined]
        assert run("return window.pwned === undefined") is True
        assert run("return document.scripts.length") == 0
        assert "window.pwned=1" in browser.find_element(By.TAG_NAME, "main").text  # type: ignore[attr-defined]
        details = browser.find_elements(By.TAG_NAME, "details")  # type: ignore[attr-defined]
        assert details and not any(item.get_attribute("open") for item in details)
        # Open every collapsed block so the images inside are laid out, then check one decoded from its data URI.
        run("document.querySelectorAll('details').forEach(d => d.open = true)")
        images = browser.find_elements(By.CSS_SELECTOR, "img.sx-image")  # type: ignore[attr-defined]
        assert len(images) == 1
        assert run("return arguments[0].complete && arguments[0].naturalWidth", images[0]) == 1
        assert images[0].get_attribute("src").startswith("data:image/png;base64,")
        assert run("return performance.getEntriesByType('resource').length") == 0
        assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []  # type: ignore[attr-defined]
        shot = tmp_path / "export.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 1000  # type: ignore[attr-defined]

