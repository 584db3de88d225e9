"""`sessdex serve` started for real on a free port and driven by a real headless Chromium: search as you type,
transcripts (hostile text stays text, branches switch, the rest loads as you scroll), the usage chart against
`sessdex usage --json`, and the 403s of a foreign Host or a missing token."""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from sessdex.catalog.web.data import ENTRIES_PER_CHUNK
from tests.browser_support import headless_chromium
from tests.catalog.test_export import AWS_KEY, SESSION_ID, hostile_records
from tests.core.sessiontree import BASE_MS, Tree, assistant, make_tree, message, user

SESSDEX = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sessdex"
LONG_ID = "ef00000000000001"


def _environment(tree: Tree) -> dict[str, str]:
    return {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir), "TZ": "UTC"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    tree = make_tree(tmp_path_factory.mktemp("serve"))
    tree.session(tree.project("proj"), SESSION_ID, hostile_records(tree), mtime_ms=BASE_MS)
    birds = tree.project("birds")
    for number in range(12):
        tree.session(birds, f"cd{number:014d}", [
            user(f"pelican migration notes {number}"),
            assistant(f"about pelicans {number}", usage={"input": 1000 * number, "output": 10, "cacheRead": 5,
                                                          "cost": {"total": 0.125 * number}})],
            mtime_ms=BASE_MS + number * 86_400_000)
    tree.session(tree.project("models"), "ce00000000000001", [
        user("pelican sighted by another model"),
        message("assistant", [{"type": "text", "text": "noted"}], "a0000001", "u0000001", provider="openai",
                model="gpt-other", usage={"input": 10, "output": 1, "cost": {"total": 0.5}})], mtime_ms=BASE_MS)
    records: list[dict[str, Any]] = []
    parent = None
    for number in range(ENTRIES_PER_CHUNK * 2 + 10):
        records.append(message("user" if number % 2 == 0 else "assistant", f"line number {number}",
                               f"m{number:07d}", parent))
        parent = f"m{number:07d}"
    tree.session(tree.project("long"), LONG_ID, records, mtime_ms=BASE_MS)
    return tree


@pytest.fixture(scope="module")
def server(tree: Tree) -> Iterator[str]:
    """The address (with the token) `sessdex serve --port 0` printed; the server is stopped afterwards."""
    process = subprocess.Popen([str(SESSDEX), "serve", "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_environment(tree), cwd=tree.home)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=([\w-]+)", line)
    try:
        assert found is not None, (line, process.stderr.read() if process.poll() is not None else "")
        yield found.group(0)
    finally:
        process.terminate()
        assert process.wait(timeout=10) is not None
        process.stdout.close()
        assert process.stderr is not None
        errors = process.stderr.read()
        process.stderr.close()
        assert "Traceback" not in errors, errors


@pytest.fixture(scope="module")
def browser(server: str) -> Iterator[Any]:
    with headless_chromium() as browser:
        browser.get(server)  # the token's address: a cookie, then the same page without the token
        assert "token=" not in browser.current_url
        yield browser


def _base(server: str) -> str:
    return server.split("/?")[0]


def _severe_logs(browser: Any) -> list[dict[str, Any]]:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def test_search_as_you_type(browser: Any, server: str, tmp_path: Path) -> None:
    browser.get(_base(server) + "/search")
    box = browser.find_element(By.ID, "q")
    box.send_keys("pelic")
    WebDriverWait(browser, 10).until(lambda b: b.find_element(By.ID, "results").get_attribute("data-query") == "pelic")
    hits = browser.find_elements(By.CSS_SELECTOR, "#results .sx-hit")
    assert len(hits) == 13
    assert browser.find_elements(By.CSS_SELECTOR, "#results mark")
    assert "q=pelic" in browser.current_url  # the address follows the query: a reload shows the same results
    box.send_keys(" 7")
    WebDriverWait(browser, 10).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#results .sx-hit")) == 1)
    assert "pelican migration notes 7" in browser.find_element(By.ID, "results").text
    assert browser.save_screenshot(str(tmp_path / "search.png"))
    assert _severe_logs(browser) == []


def test_search_filters_apply_as_they_change(browser: Any, server: str) -> None:
    browser.get(_base(server) + "/search?q=pelican")
    hits = "return document.querySelectorAll('#results .sx-hit').length"
    assert browser.execute_script(hits) == 13
    browser.find_element(By.CSS_SELECTOR, "details.sx-filters summary").click()
    Select(browser.find_element(By.NAME, "model")).select_by_visible_text("gpt-other")
    WebDriverWait(browser, 10).until(lambda b: b.execute_script(hits) == 1)
    assert "pelican sighted by another model" in browser.find_element(By.ID, "results").text
    assert "model=gpt-other" in browser.current_url
    Select(browser.find_element(By.NAME, "model")).select_by_visible_text("claude-test")
    WebDriverWait(browser, 10).until(lambda b: b.execute_script(hits) == 12)
    assert _severe_logs(browser) == []


def test_hostile_text_never_runs_and_secrets_are_redacted(browser: Any, server: str) -> None:
    browser.get(_base(server) + "/search?q=pwned")
    assert "<script>window.pwned=1</script>" in browser.find_element(By.ID, "results").text
    browser.get(_base(server) + f"/session/{SESSION_ID}?view=all")
    run = browser.execute_script
    assert run("return window.pwned === undefined") is True
    assert run("return Array.from(document.scripts).map(s => new URL(s.src).pathname)") == ["/static/app.js"]
    main = browser.find_element(By.TAG_NAME, "main").text
    assert "window.pwned=1" in main and 'onerror="window.pwned=2"' in main
    assert AWS_KEY not in browser.page_source and "[REDACTED:aws-access-key]" in main
    assert browser.find_elements(By.CSS_SELECTOR, "main img:not(.sx-image)") == []
    assert run("return performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)") == [
        "/static/app.css", "/static/app.js"]
    assert _severe_logs(browser) == []


def test_transcript_branches_model_view_and_copy(browser: Any, server: str, tmp_path: Path) -> None:
    browser.get(_base(server) + f"/session/{SESSION_ID}")
    main = browser.find_element(By.TAG_NAME, "main")
    assert "other branch" in main.text and "we did things" not in main.text
    assert browser.find_element(By.CSS_SELECTOR, "button.sx-copy").is_displayed()  # 127.0.0.1 is a secure context
    assert browser.find_element(By.ID, "resume-command").text == f"xr {SESSION_ID}"
    links = browser.find_elements(By.CSS_SELECTOR, "a.sx-branch-link")
    assert len(links) == 2
    links[0].click()
    main = browser.find_element(By.TAG_NAME, "main")
    assert "other branch" not in main.text
    browser.find_element(By.CSS_SELECTOR, "details.sx-branches").get_attribute("open")
    browser.find_element(By.ID, "model-view").click()
    assert "we did things" in browser.find_element(By.TAG_NAME, "main").text
    assert browser.save_screenshot(str(tmp_path / "session.png"))
    assert _severe_logs(browser) == []


def test_a_long_transcript_loads_the_rest_as_you_scroll(browser: Any, server: str) -> None:
    browser.get(_base(server) + f"/session/{LONG_ID}")
    count = "return document.querySelectorAll('main .sx-entry').length"
    assert browser.execute_script(count) == ENTRIES_PER_CHUNK
    for _round in range(3):
        browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        try:
            WebDriverWait(browser, 3).until(lambda b: b.execute_script(count) == ENTRIES_PER_CHUNK * 2 + 10)
            break
        except Exception:
            continue
    assert browser.execute_script(count) == ENTRIES_PER_CHUNK * 2 + 10
    assert f"line number {ENTRIES_PER_CHUNK * 2 + 9}" in browser.find_element(By.TAG_NAME, "main").text
    assert browser.find_elements(By.ID, "more") == []


def test_usage_chart_shows_the_figures_of_sessdex_usage_json(browser: Any, server: str, tree: Tree,
                                                             tmp_path: Path) -> None:
    done = subprocess.run([str(SESSDEX), "usage", "daily", "--all", "--json"], capture_output=True, text=True,
                          env=_environment(tree), cwd=tree.home, timeout=60)
    expected = json.loads(done.stdout)
    browser.get(_base(server) + "/usage?period=daily")
    total = browser.find_element(By.ID, "usage-total")
    assert float(total.get_attribute("data-cost")) == expected["totals"]["cost"]
    assert f"${expected['totals']['cost']:,.4f}" in total.text
    assert int(total.get_attribute("data-tokens")) == expected["totals"]["totalTokens"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#usage-periods tbody tr")
    assert [row.get_attribute("data-key") for row in rows] == [row["period"] for row in expected["rows"]]
    bars = browser.find_elements(By.CSS_SELECTOR, "svg.sx-chart g.sx-bar")
    assert len(bars) == len(expected["rows"])
    assert browser.find_elements(By.CSS_SELECTOR, "svg.sx-chart rect")[0].size["height"] > 0
    for kind, table, key in (("model", "usage-models", "model"), ("project", "usage-projects", "project")):
        done = subprocess.run([str(SESSDEX), "usage", kind, "--all", "--json"], capture_output=True, text=True,
                              env=_environment(tree), cwd=tree.home, timeout=60)
        rows = {row[key]: row for row in json.loads(done.stdout)["rows"]}
        shown = browser.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")
        assert {row.get_attribute("data-key") for row in shown} == set(rows), kind
        for row in shown:
            expected_row = rows[row.get_attribute("data-key")]
            assert float(row.get_attribute("data-cost")) == expected_row["cost"]
            assert int(row.get_attribute("data-tokens")) == expected_row["totalTokens"]
    assert browser.save_screenshot(str(tmp_path / "usage.png"))
    assert _severe_logs(browser) == []


def test_a_foreign_host_or_a_missing_token_gets_403(server: str, browser: Any) -> None:
    base = _base(server)
    for headers in ({}, {"Host": "attacker.example:" + base.rsplit(":", 1)[1]}):
        request = urllib.request.Request(base + "/projects", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
        refused.value.close()
    # The browser's cookie is for 127.0.0.1: the same server reached by another name has no token.
    browser.get(base.replace("127.0.0.1", "localhost") + "/projects")
    assert "Forbidden" in browser.find_element(By.TAG_NAME, "body").text
