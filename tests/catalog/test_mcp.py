"""`sessdex mcp` run as a real subprocess and driven by the MCP SDK's own client, over stdio and over HTTP.

Every answer is compared with what the CLI prints with `--json` on the same generated corpus; bad arguments come
back as one-line tool errors; a secret planted in a session and in the prompt history never shows in any answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.cli_support import run_cli
from tests.core.sessiontree import BASE_MS, Tree, assistant, make_tree, user

SECRET = "ghp_" + "Zq7" * 12  # a GitHub token shape the detector knows
SECRET_BODY = SECRET[4:]
HOUR_MS = 3_600_000
REPO = Path(__file__).resolve().parents[2]


def _usage(cost: float) -> dict[str, Any]:
    return {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
            "cost": {"total": cost}}


@pytest.fixture
def corpus(tmp_path: Path) -> Tree:
    """proj: two sessions (ab12..., ab34...), the second holding SECRET; other: one session; a history.db."""
    from sessdex.catalog.history.storage import HistoryStorage

    tree = make_tree(tmp_path)
    proj, other = tree.project("proj"), tree.project("other")
    tree.session(proj, "ab12000000000001", [
        user("fix the flaky checkout test"),
        assistant("the checkout fixture raced the clock; retried it", usage=_usage(0.5))], mtime_ms=BASE_MS)
    filler = " ".join(f"word{number}" for number in range(40))
    tree.session(proj, "ab34000000000002", [
        user("rotate the staging certificate"),
        assistant(f"{filler} certificate rotated with {SECRET} then {filler}", usage=_usage(0.25))],
        mtime_ms=BASE_MS + HOUR_MS)
    tree.session(other, "cd78000000000004", [user("checkout flow elsewhere"), assistant("fine", usage=_usage(1.0))],
                 mtime_ms=BASE_MS + 2 * HOUR_MS)
    history = HistoryStorage.open(tree.paths.agent_dir / "history.db", batch_delay=0)
    try:
        history.add("rotate the staging certificate", str(proj))
        history.add(f"deploy staging with {SECRET}", str(proj))
        history.add("checkout flake again", str(other))
    finally:
        history.close()
    return tree


def _environment(tree: Tree) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("SESSDEX_", "PI_CODING_AGENT_DIR"))}
    env.update({"HOME": str(tree.home), "TMPDIR": str(tree.root / "tmp")})
    return env


def _server_command(tree: Tree, *extra: str) -> list[str]:
    return ["-m", "sessdex.catalog", "--agent-dir", str(tree.paths.agent_dir), "mcp", *extra]


def _over_stdio(tree: Tree, scenario: Callable[[Client], Awaitable[None]]) -> None:
    """Start `sessdex mcp` in the `proj` folder and run `scenario` with a connected SDK client."""
    params = StdioServerParameters(command=sys.executable, args=_server_command(tree), cwd=str(tree.home / "proj"),
                                   env=_environment(tree))

    async def main() -> None:
        async with Client(params, read_timeout_seconds=30) as client:
            await scenario(client)

    asyncio.run(main())


@contextlib.contextmanager
def _http_server(tree: Tree) -> Iterator[tuple[str, str]]:
    """`sessdex mcp --http --port 0` started in the `proj` folder: its URL and the token it printed."""
    process = subprocess.Popen([sys.executable, *_server_command(tree, "--http", "--port", "0")],
                               cwd=str(tree.home / "proj"), env=_environment(tree), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"serving (http://127\.0\.0\.1:\d+/mcp) \(token: (\S+)\)", line)
        assert found, line
        yield found.group(1), found.group(2)
    finally:
        process.terminate()
        process.wait(timeout=20)
        if process.stderr is not None:
            process.stderr.close()


def _over_http(tree: Tree, scenario: Callable[[Client], Awaitable[None]]) -> None:
    """As _over_stdio, over streamable HTTP with the bearer token."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with _http_server(tree) as (url, token):
        async def main() -> None:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=30) as client:
                await scenario(client)

        asyncio.run(main())


TRANSPORTS = {"stdio": _over_stdio, "http": _over_http}


def _answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content  # type: ignore[no-any-return]


def _error(result: Any) -> str:
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text, text
    return text  # type: ignore[no-any-return]


def _cli_json(tree: Tree, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    monkeypatch.chdir(tree.home / "proj")
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    outcome = run_cli(["--agent-dir", str(tree.paths.agent_dir), *args, "--json"], capsys)
    assert outcome.code == 0, outcome.err
    return json.loads(outcome.out)


def test_tools_are_declared_with_their_schemas(corpus: Tree) -> None:
    async def scenario(client: Client) -> None:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert sorted(listed) == ["list_sessions", "read_session", "search_prompts", "search_sessions",
                                  "usage_report"]
        for tool in listed.values():
            assert tool.description and tool.annotations is not None and tool.annotations.read_only_hint
            for name, schema in tool.input_schema["properties"].items():
                assert schema.get("description"), (tool.name, name)
        search = listed["search_sessions"].input_schema
        assert search["required"] == ["query"]
        assert set(search["properties"]) == {"query", "project", "all_projects", "since", "until", "limit"}
        assert search["properties"]["limit"]["maximum"] == 50
        read = listed["read_session"].input_schema["properties"]
        assert read["view"]["enum"] == ["summary", "context", "transcript"]
        assert listed["usage_report"].input_schema["properties"]["kind"]["enum"] == [
            "daily", "weekly", "monthly", "session", "project", "model"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [template.uri_template for template in templates] == ["session://{session_id}"]

    _over_stdio(corpus, scenario)


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_answers_match_the_cli_json(corpus: Tree, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch, transport: str) -> None:
    answers: dict[str, Any] = {}
    monkeypatch.chdir(corpus.home / "proj")
    for marks in (["pin", "ab12"], ["tag", "ab34", "+certs"]):
        assert run_cli(["--agent-dir", str(corpus.paths.agent_dir), *marks], capsys).code == 0

    async def scenario(client: Client) -> None:
        answers["list"] = _answer(await client.call_tool("list_sessions", {}))
        answers["list_all"] = _answer(await client.call_tool("list_sessions", {"all_projects": True, "limit": 2}))
        answers["search"] = _answer(await client.call_tool("search_sessions", {"query": "checkout"}))
        answers["search_all"] = _answer(await client.call_tool("search_sessions", {"query": "checkout",
                                                                                   "all_projects": True}))
        answers["prompts"] = _answer(await client.call_tool("search_prompts", {"query": "staging"}))
        answers["usage"] = _answer(await client.call_tool("usage_report", {"kind": "session", "all_projects": True}))
        answers["daily"] = _answer(await client.call_tool("usage_report", {"since": "2024-12-31"}))
        for since, count in (("2024-12-30", 2), ("2025-01-03", 0)):  # the sessions changed on 2025-01-01
            listed = _answer(await client.call_tool("list_sessions", {"since": since}))
            assert listed["total"] == count
            found = _answer(await client.call_tool("search_sessions", {"query": "checkout", "all_projects": True,
                                                                       "since": since}))
            assert len(found["sessions"]) == min(count, 2)
        assert _answer(await client.call_tool("search_sessions", {"query": "checkout",
                                                                  "until": "2024-12-30"}))["sessions"] == []
        answers["transcript"] = _answer(await client.call_tool("read_session", {"session": "ab34",
                                                                                "view": "transcript",
                                                                                "max_chars": 100_000}))
        answers["context"] = _answer(await client.call_tool("read_session", {"session": "ab12", "view": "context"}))

    TRANSPORTS[transport](corpus, scenario)
    proj = str(corpus.home / "proj")
    assert answers["list"]["project"] == proj
    cli_list = _cli_json(corpus, capsys, monkeypatch, "list")
    assert answers["list"]["sessions"] == cli_list
    assert [session["id"] for session in cli_list] == ["ab12000000000001", "ab34000000000002"]  # pinned first
    assert cli_list[1]["marks"]["tags"] == ["certs"]
    every = _cli_json(corpus, capsys, monkeypatch, "list", "--all")
    assert answers["list_all"]["sessions"] == every[:2] and answers["list_all"]["total"] == len(every) == 3
    assert answers["search"]["sessions"] == _cli_json(corpus, capsys, monkeypatch, "search", "checkout")
    assert [hit["id"] for hit in answers["search"]["sessions"]] == ["ab12000000000001"]
    searched_all = _cli_json(corpus, capsys, monkeypatch, "search", "checkout", "--all")
    assert answers["search_all"]["sessions"] == searched_all and len(searched_all) == 2
    assert answers["search"]["sessions"][0]["snippet"] == "fix the flaky [checkout] test"
    prompts = _cli_json(corpus, capsys, monkeypatch, "history", "search", "staging")
    assert [p["id"] for p in answers["prompts"]["prompts"]] == [p["id"] for p in prompts]
    assert answers["prompts"]["prompts"][1] == prompts[1]  # the one without a secret: the same object
    usage = _cli_json(corpus, capsys, monkeypatch, "usage", "session", "--all")
    assert {key: value for key, value in answers["usage"].items() if key != "project"} == usage
    assert answers["usage"]["totals"]["cost"] == 1.75 and answers["usage"]["project"] is None
    daily = _cli_json(corpus, capsys, monkeypatch, "usage", "--since", "2024-12-31")
    assert {key: value for key, value in answers["daily"].items() if key != "project"} == daily
    # read_session: the transcript is `sessdex export --format md` (redacted), its session the object of `list`.
    exported = run_cli(["--agent-dir", str(corpus.paths.agent_dir), "export", "ab34", "--format", "md"], capsys)
    assert exported.code == 0, exported.err
    assert answers["transcript"]["text"] == exported.out and answers["transcript"]["nextOffset"] is None
    assert "[REDACTED:github-token]" in exported.out
    listed = {session["id"]: session for session in answers["list"]["sessions"]}
    assert answers["transcript"]["session"] == listed["ab34000000000002"]
    context = _cli_json(corpus, capsys, monkeypatch, "context", "ab12")
    for message in context["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else [message["content"]]:
            text = block["text"] if isinstance(block, dict) else block
            assert text in answers["context"]["text"]


def test_read_session_views_and_pages(corpus: Tree) -> None:
    async def scenario(client: Client) -> None:
        summary = _answer(await client.call_tool("read_session", {"session": "ab12"}))
        assert summary["session"]["id"] == "ab12000000000001" and summary["view"] == "summary"
        assert "fix the flaky checkout test" in summary["text"] and "$0.5000" in summary["text"]
        context = _answer(await client.call_tool("read_session", {"session": "ab12", "view": "context"}))
        assert "2 messages" in context["text"] and "retried it" in context["text"]
        whole = _answer(await client.call_tool("read_session", {"session": "ab12000000000001",
                                                                "view": "transcript"}))
        assert whole["nextOffset"] is None and whole["totalChars"] == len(whole["text"])
        assert "### user" in whole["text"] and "the checkout fixture raced the clock" in whole["text"]
        pages, offset = [], 0
        while offset is not None:
            part = _answer(await client.call_tool("read_session", {"session": "ab12", "view": "transcript",
                                                                   "max_chars": 100, "offset": offset}))
            assert len(part["text"]) <= 100
            pages.append(part["text"])
            offset = part["nextOffset"]
        assert "".join(pages) == whole["text"] and len(pages) > 1
        resource = await client.read_resource("session://ab12")
        assert resource.contents[0].text == whole["text"]

    _over_stdio(corpus, scenario)


def test_bad_arguments_are_one_line_tool_errors(corpus: Tree) -> None:
    async def scenario(client: Client) -> None:
        call = client.call_tool
        assert 'Session "ffff" not found' in _error(await call("read_session", {"session": "ffff"}))
        ambiguous = _error(await call("read_session", {"session": "ab"}))
        assert "ambiguous" in ambiguous and "ab12000000000001" in ambiguous and "ab34000000000002" in ambiguous
        assert "limit" in _error(await call("search_sessions", {"query": "checkout", "limit": 10**12}))
        assert "limit" in _error(await call("list_sessions", {"limit": 0}))
        assert "max_chars" in _error(await call("read_session", {"session": "ab12", "max_chars": 10**9}))
        assert "past the end" in _error(await call("read_session", {"session": "ab12", "offset": 10**9}))
        assert "view" in _error(await call("read_session", {"session": "ab12", "view": "everything"}))
        assert "query" in _error(await call("search_sessions", {"query": "x" * 5000}))
        assert "query" in _error(await call("search_sessions", {}))
        assert "YYYY-MM-DD" in _error(await call("usage_report", {"since": "yesterday"}))
        assert "kind" in _error(await call("usage_report", {"kind": "hourly"}))
        assert "under" in _error(await call("read_session", {"session": "/etc/passwd"}))
        assert "under" in _error(await call("read_session", {"session": "../../../../etc/hosts.jsonl"}))
        for hostile in ['"unbalanced', "NEAR(a b) OR * AND", "\x1b[31m\u202echeckout\x00", "col:value ^ -x",
                        "' OR 1=1 --", "checkout*"]:
            result = await call("search_sessions", {"query": hostile})
            if result.is_error:
                _error(result)
            else:
                _answer(result)
        hostile_prompt = await call("search_prompts", {"query": "\"' OR 1=1 -- %_"})
        if hostile_prompt.is_error:
            _error(hostile_prompt)
        # The server is still answering after all of it.
        assert _answer(await call("list_sessions", {}))["total"] == 2

    _over_stdio(corpus, scenario)


def test_a_planted_secret_never_appears_in_an_answer(corpus: Tree) -> None:
    texts: list[str] = []

    async def scenario(client: Client) -> None:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("list_sessions", {"all_projects": True}),
            ("search_sessions", {"query": "certificate"}),
            ("search_sessions", {"query": "rotated"}),
            ("search_sessions", {"query": SECRET_BODY}),  # the secret's own text as the query
            ("search_sessions", {"query": "ghp"}),
            ("search_sessions", {"query": "word39 certificate"}),
            ("search_prompts", {"query": "deploy"}),
            ("search_prompts", {"query": SECRET_BODY[:8]}),
            ("usage_report", {"kind": "session"}),
        ] + [("read_session", {"session": "ab34", "view": view}) for view in ("summary", "context", "transcript")]
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            texts.extend(block.text for block in result.content)
        for offset in range(0, 2000, 37):  # pages cut at every place: none holds a piece that is the secret
            result = await client.call_tool("read_session", {"session": "ab34", "view": "transcript",
                                                             "max_chars": 100, "offset": offset})
            if not result.is_error:
                texts.append(_answer(result)["text"])
        texts.append((await client.read_resource("session://ab34")).contents[0].text)

    _over_stdio(corpus, scenario)
    joined = "\n".join(texts)
    assert "[REDACTED:github-token]" in joined  # the secret was there to find, and was replaced
    assert SECRET_BODY[:12] not in joined
    assert "deploy staging with" in joined  # the prompt itself is answered, without its secret


def test_http_needs_the_bearer_token(corpus: Tree) -> None:
    with _http_server(corpus) as (url, token):
        for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}, {"Authorization": token}):
            request = urllib.request.Request(url, data=b"{}", method="POST",
                                             headers={"Content-Type": "application/json", **headers})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 401
            refused.value.close()

    async def scenario(client: Client) -> None:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "search_sessions" in names
        listed = _answer(await client.call_tool("list_sessions", {}))
        assert [session["id"] for session in listed["sessions"]] == ["ab34000000000002", "ab12000000000001"]
        assert "not found" in _error(await client.call_tool("read_session", {"session": "ffff"}))
        assert "ambiguous" in _error(await client.call_tool("read_session", {"session": "ab"}))

    _over_http(corpus, scenario)


def test_print_config_names_the_server_command(corpus: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    agent_dir = str(corpus.paths.agent_dir)
    claude = run_cli(["--agent-dir", agent_dir, "mcp", "--print-config", "claude"], capsys)
    assert claude.code == 0
    entry = json.loads(claude.out)["mcpServers"]["sessdex"]
    assert entry["args"] == ["--agent-dir", agent_dir, "mcp"] and entry["command"].endswith("sessdex")
    assert ".mcp.json" in claude.err
    xcsh = json.loads(run_cli(["mcp", "--print-config", "xcsh"], capsys).out)
    assert xcsh["mcpServers"]["sessdex"]["args"] == ["mcp"]
    codex = run_cli(["mcp", "--print-config", "codex"], capsys)
    assert codex.out.startswith("[mcp_servers.sessdex]\ncommand = ") and 'args = ["mcp"]' in codex.out
    refused = run_cli(["mcp", "--port", "9"], capsys)
    assert refused.code == 2 and "--http" in refused.err


def test_the_http_token_file_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessdex.catalog.mcp.server import TOKEN_ENV, resolve_token
    from sessdex.core.errors import UsageError

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    stored = tmp_path / "token"
    token, new = resolve_token(str(stored))
    assert new and len(token) >= 32 and stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert resolve_token(str(stored)) == (token, False)
    stored.chmod(0o644)
    with pytest.raises(UsageError, match="0600"):
        resolve_token(str(stored))
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError):
        resolve_token(str(link))
    assert not (tmp_path / "elsewhere").exists()  # never written through the symlink
    monkeypatch.setenv(TOKEN_ENV, "short")
    with pytest.raises(UsageError, match=TOKEN_ENV):
        resolve_token(None)
    monkeypatch.setenv(TOKEN_ENV, "x" * 40)
    assert resolve_token(None) == ("x" * 40, False)
