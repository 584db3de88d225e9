"""`sessdex serve`'s app in-process (Starlette's TestClient over a real catalog of real session files): the Host
and token checks, the pages, hostile text and secrets, pagination, branches, usage against `sessdex usage --json`,
the prompt history, and the command's refusals."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sessdex.catalog.history.storage import HistoryStorage
from sessdex.catalog.store.settings import Settings
from sessdex.catalog.web.app import create_app
from sessdex.catalog.web.data import CHUNK_BYTES, ENTRIES_PER_CHUNK, SEARCH_RESULTS, SESSIONS_PER_PAGE, WebCatalog
from sessdex.catalog.web.security import cookie_name
from tests.catalog.test_export import AWS_KEY, SESSDEX, SESSION_ID, hostile_records, sessdex
from tests.core.sessiontree import BASE_MS, Tree, assistant, make_tree, message, user

TOKEN = "test-token-0123456789"
PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"


def _costly(text: str, cost: float, entry: int = 1) -> list[dict[str, object]]:
    return [user(text, f"u{entry:07d}"), assistant(f"reply about {text}", f"a{entry:07d}", f"u{entry:07d}",
                                                   usage={"input": 100, "output": 20, "cost": {"total": cost}})]


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    tree.session(tree.project("proj"), SESSION_ID, hostile_records(tree), mtime_ms=BASE_MS)
    other = tree.project("other")
    for number in range(SESSIONS_PER_PAGE + 5):
        tree.session(other, f"cd{number:014d}", _costly(f"pelican topic {number}", 0.01 * (number % 7)),
                     mtime_ms=BASE_MS + number * 60_000)
    return tree


@pytest.fixture
def web(tree: Tree) -> Iterator[WebCatalog]:
    catalog = WebCatalog(Settings(paths=tree.paths))
    yield catalog
    catalog.stop()


def _client(web: WebCatalog) -> TestClient:
    return TestClient(create_app(web, token=TOKEN, host="127.0.0.1", port=PORT, manage_catalog=False),
                      base_url=BASE)


@pytest.fixture
def client(web: WebCatalog) -> Iterator[TestClient]:
    with _client(web) as client:
        entered = client.get(f"/?token={TOKEN}", follow_redirects=False)
        assert entered.status_code == 303
        yield client


def test_requests_without_the_token_or_with_a_foreign_host_are_refused(web: WebCatalog) -> None:
    with _client(web) as client:
        assert client.get("/search").status_code == 403
        assert client.get("/search?token=wrong").status_code == 403
        client.cookies.set(cookie_name(PORT), "wrong")
        assert client.get("/projects").status_code == 403
        client.cookies.clear()
        entered = client.get(f"/usage?period=weekly&token={TOKEN}", follow_redirects=False)
        assert entered.status_code == 303 and entered.headers["location"] == "/usage?period=weekly"
        assert "HttpOnly" in entered.headers["set-cookie"] and "SameSite=Strict" in entered.headers["set-cookie"]
        assert client.get("/usage?period=weekly").status_code == 200  # the cookie carries the token now
        rebound = client.get("/projects", headers={"Host": f"attacker.example:{PORT}"})
        assert rebound.status_code == 403 and "sx-" not in rebound.text
        assert client.get("/projects", headers={"Host": f"localhost:{PORT}"}).status_code == 200
        assert client.post("/search", data={"q": "x"}).status_code == 405
        policy = rebound.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy


def test_every_page_carries_the_strict_policy_and_works_without_script(client: TestClient) -> None:
    for path in ("/search?q=pelican", "/projects", f"/session/{SESSION_ID}", "/usage", "/history"):
        page = client.get(path)
        assert page.status_code == 200, path
        assert page.headers["content-security-policy"].startswith("default-src 'none'; script-src 'self'")
        assert page.headers["x-frame-options"] == "DENY" and page.headers["referrer-policy"] == "no-referrer"
        assert re.findall(r"<script[^>]*>", page.text) == ['<script src="/static/app.js" defer>']
        assert not re.search(r"<[^>]*\sstyle=", page.text)  # inline styles would need 'unsafe-inline'
        assert not re.search(r"""(src|action)=["']?(https?:)?//""", page.text)  # nothing fetched from elsewhere
    assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")
    assert ".sx-transcript" in client.get("/static/app.css").text
    assert client.get("/static/../data.py").status_code == 404


def test_search_shows_highlighted_snippets_and_filters(client: TestClient, tree: Tree) -> None:
    page = client.get("/search", params={"q": "pelican topic 7"})
    assert page.status_code == 200
    assert "<mark>pelican</mark>" in page.text and 'href="/session/cd00000000000007"' in page.text
    fragment = client.get("/search", params={"q": "pelican", "partial": "1"}).text
    assert "<html" not in fragment and fragment.count('class="sx-hit"') == SEARCH_RESULTS
    more = re.search(r'id="more-results" href="([^"]+)"', fragment)
    assert more is not None and "partial" not in more.group(1)
    every = client.get(more.group(1).replace("&amp;", "&")).text  # n = 4 x SEARCH_RESULTS: all 55 sessions
    assert every.count('class="sx-hit"') == SESSIONS_PER_PAGE + 5 and 'id="more-results"' not in every
    assert client.get("/search", params={"q": "pelican", "n": "x"}).status_code == 400
    later = client.get("/search", params={"q": "pelican", "since": "2099-01-01", "partial": "1"}).text
    assert "No matching sessions" in later
    scoped = client.get("/search", params={"q": "pelican", "project": str(tree.home / "proj"), "partial": "1"}).text
    assert "No matching sessions" in scoped
    bad = client.get("/search", params={"q": "x", "since": "yesterday"})
    assert bad.status_code == 400 and "YYYY-MM-DD" in bad.text and "Traceback" not in bad.text


def test_search_filters_by_model_and_marks(client: TestClient, web: WebCatalog, tree: Tree) -> None:
    other_model = "gpt-filter"  # named as every usage report names it: without its provider
    tree.session(tree.project("models"), "ee00000000000001", [
        user("pelican of another model", "u0000001"),
        message("assistant", [{"type": "text", "text": "reply"}], "a0000001", "u0000001", provider="openai",
                model="gpt-filter", usage={"input": 10, "output": 2, "cost": {"total": 0.5}})], mtime_ms=BASE_MS)
    web.refresh()
    for args in (("pin", "cd00000000000003"), ("star", "cd00000000000004"), ("tag", "cd00000000000005", "+bug"),
                 ("tag", "cd00000000000004", "+bug")):
        assert sessdex(tree, *args).returncode == 0

    def found(**params: str) -> list[str]:
        page = client.get("/search", params={"q": "pelican", "partial": "1", "n": "200", **params})
        assert page.status_code == 200, page.text
        return re.findall(r'class="sx-title" href="/session/([0-9a-f]+)"', page.text)

    assert found(model=other_model) == ["ee00000000000001"]
    tree.session(tree.project("models"), "ee00000000000002", [
        user("pelican of another model again", "u0000001"),
        message("assistant", [{"type": "text", "text": "reply"}], "a0000001", "u0000001", provider="openai",
                model="gpt-filter", usage={"input": 10, "output": 2, "cost": {"total": 0.5}})],
        mtime_ms=BASE_MS + 60_000)
    web.refresh()  # the catalog changed: who used which model is asked again
    assert sorted(found(model=other_model)) == ["ee00000000000001", "ee00000000000002"]
    assert "ee00000000000001" not in found(model="claude-test")
    assert len(found()) == SESSIONS_PER_PAGE + 7
    assert found(pinned="1") == ["cd00000000000003"]
    assert found(starred="1") == ["cd00000000000004"]
    assert sorted(found(tag="bug")) == ["cd00000000000004", "cd00000000000005"]
    assert found(tag="+bug", starred="1") == ["cd00000000000004"]
    assert found(tag="nothing") == []
    form = client.get("/search", params={"q": "pelican", "tag": "bug"}).text
    assert f"<option>{other_model}</option>" in form and "<option selected>bug</option>" in form
    assert client.get("/search", params={"q": "pelican", "tag": "-x"}).status_code == 400


def test_hostile_session_text_stays_text_and_secrets_are_redacted(client: TestClient) -> None:
    page = client.get(f"/session/{SESSION_ID}", params={"view": "all"}).text
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page
    assert "<script>window" not in page and 'onerror="' not in page and 'href="javascript:' not in page
    assert "\x1b" not in page and "\u202e" not in page
    assert AWS_KEY not in page and "[REDACTED:aws-access-key]" in page
    for view in ("branch", "context"):
        shown = client.get(f"/session/{SESSION_ID}", params={"view": view, "leaf": "c0000001"}).text
        assert AWS_KEY not in shown and "[REDACTED:aws-access-key]" in shown, view
    fragment = client.get(f"/session/{SESSION_ID}/entries", params={"leaf": "c0000001"}).text
    assert AWS_KEY not in fragment and "[REDACTED:aws-access-key]" in fragment
    found = client.get("/search", params={"q": "pwned"}).text
    assert "[REDACTED:aws-access-key]" in found and AWS_KEY not in found
    assert "<script>window" not in found and "<img src" not in found
    assert "xr " + SESSION_ID in page  # the command that resumes it


def test_no_redact_shows_the_secrets(tree: Tree) -> None:
    web = WebCatalog(Settings(paths=tree.paths), redact=False)
    try:
        with _client(web) as client:
            client.get(f"/?token={TOKEN}")
            assert AWS_KEY in client.get(f"/session/{SESSION_ID}").text
    finally:
        web.stop()


def test_projects_and_a_projects_sessions_paginated_and_sortable(client: TestClient, web: WebCatalog,
                                                                 tree: Tree) -> None:
    projects = client.get("/projects").text
    other = str(tree.home / "other")
    assert projects.index(other) < projects.index(str(tree.home / "proj"))  # most recently active first
    row = re.search(r"<tr><td><a href=\"/project\?cwd=[^\"]*other\">.*?</tr>", projects, re.S)
    assert row is not None and f">{SESSIONS_PER_PAGE + 5}<" in row.group(0)
    first = client.get("/project", params={"cwd": other}).text
    ids = re.findall(r'href="/session/(cd\d+)"', first)
    assert len(ids) == SESSIONS_PER_PAGE and ids[0] == f"cd{SESSIONS_PER_PAGE + 4:014d}"  # newest first
    assert 'rel="next"' in first and "page 1 of 2" in first
    second = client.get("/project", params={"cwd": other, "page": "2"}).text
    assert len(re.findall(r'href="/session/(cd\d+)"', second)) == 5
    by_cost = client.get("/project", params={"cwd": other, "sort": "cost", "order": "asc"}).text
    costs = [float(value) for value in re.findall(r'<td class="num">\$([\d.]+)</td>', by_cost)]
    assert costs == sorted(costs) and costs[0] == 0
    assert client.get("/project", params={"cwd": other, "sort": "size"}).status_code == 400

    def project_order(**params: str) -> list[str]:
        page = client.get("/projects", params=params)
        assert page.status_code == 200
        return [folder.rsplit("/", 1)[-1] for folder in re.findall(r'href="/project\?cwd=([^"]+)"', page.text)]

    assert project_order() == ["other", "proj"]
    assert project_order(sort="name") == ["other", "proj"] and project_order(sort="name", order="desc") == [
        "proj", "other"]
    assert project_order(sort="sessions", order="asc") == ["proj", "other"]
    assert project_order(sort="cost") == ["other", "proj"]  # the hostile session costs nothing
    web_page = web.project_page(per_page=1, page=2)
    assert (web_page.page, web_page.pages, web_page.total) == (2, 2, 2) and web_page.projects[0].cwd.endswith("proj")
    assert client.get("/projects", params={"sort": "size"}).status_code == 400


def test_transcript_branches_model_view_and_chunks(client: TestClient, web: WebCatalog, tree: Tree) -> None:
    page = client.get(f"/session/{SESSION_ID}").text
    assert "other branch" in page and "we did things" not in page  # the newest leaf's branch
    links = re.findall(r'class="sx-branch-link" href="([^"]+)"', page)
    assert len(links) == 2
    switched = client.get(links[0].replace("&amp;", "&")).text
    assert "we did things" in switched and "other branch" not in switched
    everything = client.get(f"/session/{SESSION_ID}", params={"view": "all"}).text
    assert "other branch" in everything and "we did things" in everything and 'class="sx-branch"' in everything
    model_view = client.get(f"/session/{SESSION_ID}", params={"view": "context", "leaf": "c0000001"}).text
    assert "we did things" in model_view and 'aria-current="page">What the model sees' in model_view
    assert client.get("/session/nope").status_code == 404
    assert client.get(f"/session/{SESSION_ID}", params={"leaf": "zzz"}).status_code == 400

    long_id = "ef00000000000001"
    records: list[dict[str, object]] = []
    parent = None
    for number in range(ENTRIES_PER_CHUNK + 20):
        records.append(message("user" if number % 2 == 0 else "assistant", f"line number {number}",
                               f"m{number:07d}", parent))
        parent = f"m{number:07d}"
    tree.session(tree.project("long"), long_id, records, mtime_ms=BASE_MS)
    web.refresh()
    first = client.get(f"/session/{long_id}").text
    assert "line number 0<" in first and f"line number {ENTRIES_PER_CHUNK - 1}<" in first
    assert f"line number {ENTRIES_PER_CHUNK}<" not in first and 'id="more"' in first
    fragment_url = re.search(r'data-fragment="([^"]+)"', first)
    assert fragment_url is not None
    rest = client.get(fragment_url.group(1).replace("&amp;", "&"))
    assert f"line number {ENTRIES_PER_CHUNK}<" in rest.text and "x-next-start" not in rest.headers
    no_script = client.get(f"/session/{long_id}", params={"start": str(ENTRIES_PER_CHUNK)}).text
    assert f"line number {ENTRIES_PER_CHUNK + 19}<" in no_script


def test_a_transcript_of_huge_entries_comes_in_chunks_of_bounded_size(client: TestClient, web: WebCatalog,
                                                                       tree: Tree) -> None:
    big_id, size = "ef00000000000002", CHUNK_BYTES * 3 // 4
    records: list[dict[str, object]] = []
    parent = None
    for number in range(6):
        text = f"huge entry {number} " + ("lorem ipsum " * (size // 12)) + (AWS_KEY if number == 5 else "")
        records.append(message("user" if number % 2 == 0 else "assistant", text, f"h{number:07d}", parent))
        parent = f"h{number:07d}"
    tree.session(tree.project("huge"), big_id, records, mtime_ms=BASE_MS)
    web.refresh()
    first = client.get(f"/session/{big_id}").text
    assert "huge entry 0 " in first and "huge entry 1 " in first and "huge entry 2 " not in first
    seen, start = 2, re.search(r'data-fragment="[^"]*start=(\d+)', first)
    assert start is not None and start.group(1) == "2"
    following: str | None = "2"
    while following is not None:
        part = client.get(f"/session/{big_id}/entries", params={"start": following})
        assert part.status_code == 200 and f"huge entry {seen} " in part.text
        assert AWS_KEY not in part.text
        seen += part.text.count('class="sx-entry')
        following = part.headers.get("x-next-start")
    assert seen == 6 and "[REDACTED:aws-access-key]" in part.text


def test_new_sessions_appear_after_the_freshness_pass(client: TestClient, web: WebCatalog, tree: Tree) -> None:
    assert "/session/fe00000000000001" not in client.get("/search", params={"q": "albatross"}).text
    tree.session(tree.project("proj"), "fe00000000000001", _costly("albatross sighting", 0.5), mtime_ms=BASE_MS)
    web.refresh()
    assert 'href="/session/fe00000000000001"' in client.get("/search", params={"q": "albatross"}).text


def test_the_server_starts_a_watcher_that_keeps_the_pages_fresh(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessdex.catalog.index.autostart import MARKER_SUFFIX
    from sessdex.catalog.index.reconcile import read_heartbeat

    monkeypatch.setenv("SESSDEX_AUTOWATCH", "1")
    monkeypatch.setenv("SESSDEX_AUTOWATCH_IDLE", "60")
    web = WebCatalog(Settings(paths=tree.paths), start_watcher=True)
    location = web.catalog.location
    marker = location.sidecar_file(MARKER_SUFFIX)
    try:
        deadline = time.monotonic() + 30
        while read_heartbeat(location) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert read_heartbeat(location) is not None
        tree.session(tree.project("proj"), "fd00000000000001", _costly("cormorant colony", 0.1), mtime_ms=BASE_MS)
        while not web.search("cormorant") and time.monotonic() < deadline:  # no pass of ours: the watcher's
            time.sleep(0.1)
        assert [hit.session.id for hit in web.search("cormorant")] == ["fd00000000000001"]
    finally:
        web.stop()
        with open(marker, encoding="utf-8") as handle:
            pid = int(handle.read())
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)  # the watcher is this process's child until it is reaped


def test_usage_figures_are_those_of_sessdex_usage_json(client: TestClient, tree: Tree) -> None:
    for period in ("daily", "weekly", "monthly"):
        expected = json.loads(sessdex(tree, "usage", period, "--all", "--json").stdout)
        assert client.get("/usage.json", params={"report": period}).json() == expected
        page = client.get("/usage", params={"period": period}).text
        total = re.search(r'id="usage-total" class="sx-total" data-cost="([^"]+)" data-tokens="(\d+)"', page)
        assert total is not None
        assert float(total.group(1)) == expected["totals"]["cost"]
        assert int(total.group(2)) == expected["totals"]["totalTokens"]
        assert "<svg" in page and "<rect" in page
    projects = json.loads(sessdex(tree, "usage", "project", "--all", "--json").stdout)
    page = client.get("/usage").text
    for row in projects["rows"]:
        assert f'data-cost="{row["cost"]}"' in page
    proj = str(tree.home / "proj")
    here = json.loads(sessdex(tree, "usage", "model", "--json").stdout)  # run in ~/proj: that project only
    assert client.get("/usage.json", params={"report": "model", "project": proj}).json() == here
    assert client.get("/usage", params={"period": "hourly"}).status_code == 400


def test_prompt_history_search(client: TestClient, tree: Tree) -> None:
    assert "No prompt history yet" in client.get("/history", params={"q": "deploy"}).text
    with HistoryStorage.open(agent_dir=tree.paths.agent_dir) as history:
        history.add("deploy the <b>staging</b> server " + AWS_KEY, str(tree.home / "proj"))
        history.add("unrelated prompt")
    page = client.get("/history", params={"q": "deploy"}).text
    assert "<mark>deploy</mark>" in page and "&lt;b&gt;staging&lt;/b&gt;" in page
    assert AWS_KEY not in page and "[REDACTED:aws-access-key]" in page and "unrelated" not in page


def _outward_address() -> str | None:
    """This machine's address on its default route (a UDP socket's own address: no packet is sent), if any."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else str(address)


def test_a_remote_host_still_needs_the_token_and_its_own_name(tree: Tree) -> None:
    import http.client
    import subprocess

    address = _outward_address()
    if address is None:
        pytest.skip("this machine has no address other than loopback")
    environment = {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir)}
    process = subprocess.Popen([str(SESSDEX), "serve", "--host", address, "--allow-remote", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment,
                               cwd=tree.home)
    try:
        assert process.stdout is not None
        found = re.search(r"http://([\d.]+):(\d+)/\?token=(\S+)", process.stdout.readline())
        assert found is not None and found.group(1) == address
        port, token = int(found.group(2)), found.group(3)

        def status(path: str, host: str) -> tuple[int, str]:
            connection = http.client.HTTPConnection(address, port, timeout=30)
            try:
                connection.request("GET", path, headers={"Host": host})
                response = connection.getresponse()
                response.read()
                return response.status, response.getheader("set-cookie") or ""
            finally:
                connection.close()

        assert status("/projects", f"{address}:{port}")[0] == 403  # no token
        assert status(f"/projects?token={token}", f"127.0.0.1:{port}")[0] == 403  # not the name it serves
        entered, cookie = status(f"/projects?token={token}", f"{address}:{port}")
        assert entered == 303 and token in cookie
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def test_serve_refuses_unsafe_hosts_and_a_missing_catalog(tree: Tree) -> None:
    for args, says in ((("--host", "192.0.2.1"), "--allow-remote"), (("--host", "0.0.0.0"), "not every address"),
                       (("--catalog", "off"), "catalog"), (("--port", "70000"), "port")):
        done = sessdex(tree, "serve", *args)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_search_filters_by_git_repository_and_machine_keep_exactly_those_sessions(tmp_path: Path) -> None:
    """The git repository filter keeps the sessions whose cwd is in any worktree of the repository holding the
    folder given (a subfolder, the main worktree, a linked one), and nothing else; the machine filter keeps one
    machine's sessions of a catalog shared with another."""
    import subprocess

    tree = make_tree(tmp_path / "laptop")
    repo = tree.project("repo")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    linked = tree.home / "repo-linked"
    subprocess.run([*git, "worktree", "add", "-q", str(linked)], check=True)
    inside = {"ea00000000000001": repo, "ea00000000000002": tree.project("repo/sub"), "ea00000000000003": linked}
    outside = {"eb00000000000004": tree.project("elsewhere"), "eb00000000000005": tree.project("repo-other")}
    for number, (session_id, cwd) in enumerate({**inside, **outside}.items()):
        tree.session(cwd, session_id, _costly(f"heron sighting {number}", 0.01, number + 1), mtime_ms=BASE_MS + number)
    devbox = make_tree(tmp_path / "devbox")
    devbox.session(devbox.project("repo"), "ec00000000000006", _costly("heron on the devbox", 0.02),
                   mtime_ms=BASE_MS)
    catalog = str(tree.paths.agent_dir / "catalog.db")
    for agent, machine in ((tree, "laptop"), (devbox, "devbox")):
        done = subprocess.run([str(SESSDEX), "--agent-dir", str(agent.paths.agent_dir), "--catalog", catalog,
                               "--machine", machine, "index"], env={**os.environ, "HOME": str(agent.home)},
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    web = WebCatalog(Settings(paths=tree.paths, catalog=catalog, machine="laptop", machines="all"))
    try:
        with _client(web) as client:
            assert client.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303

            def found(**params: str) -> set[str]:
                page = client.get("/search", params={"q": "heron", "partial": "1", "n": "200", **params})
                assert page.status_code == 200, page.text
                return set(re.findall(r'class="sx-title" href="/session/([0-9a-f]+)"', page.text))

            every = set(inside) | set(outside) | {"ec00000000000006"}
            assert found() == every
            for folder in (repo, repo / "sub", linked):  # any folder of the repository: all its worktrees
                assert found(repo=str(folder)) == set(inside), folder
            assert found(repo=str(tree.home / "elsewhere")) == {"eb00000000000004"}  # not a repository: the folder
            assert found(machine="devbox") == {"ec00000000000006"}
            assert found(machine="laptop") == every - {"ec00000000000006"}
            assert found(machine="devbox", repo=str(repo)) == set()  # both filters: the devbox has no such folder
            form = client.get("/search", params={"q": "heron", "machine": "devbox"}).text
            assert "<option>laptop</option>" in form and "<option selected>devbox</option>" in form
    finally:
        web.stop()
