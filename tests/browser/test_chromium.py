"""The browser the page tests rely on starts, renders a local file and runs its script."""

from __future__ import annotations

from pathlib import Path

from tests.browser_support import headless_chromium


def test_headless_chromium_renders_a_local_page(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(
        "<!doctype html><title>t</title><p id='p'>before</p>"
        "<script>document.getElementById('p').textContent = 'after'</script>",
        encoding="utf-8",
    )
    with headless_chromium() as browser:
        browser.get(page.as_uri())  # type: ignore[attr-defined]
        assert browser.find_element("id", "p").text == "after"  # type: ignore[attr-defined]
