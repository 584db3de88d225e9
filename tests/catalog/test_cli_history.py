"""`sessdex history recent | search | add | import`, run as a user would: argv in, stdout/stderr/exit code out."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from sessdex.catalog.tui.width import display_width
from tests.cli_support import Outcome, run_cli


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (home / "other").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("TZ", "UTC")
    return home / ".xcsh" / "agent"


@pytest.fixture
def sessdex(agent_dir: Path, monkeypatch, capsys):
    def run(cwd: Path, *args: str, stdin: str | None = None) -> Outcome:
        monkeypatch.chdir(cwd)
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        return run_cli(["--agent-dir", str(agent_dir), *args], capsys)
    return run


def as_json(outcome: Outcome) -> list[dict]:
    assert outcome.code == 0, outcome.err
    return json.loads(outcome.out)


def write_session(path: Path, cwd: str, lines: list[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text)


def user_message(entry_id: str, text: object, timestamp_ms: int | None) -> dict:
    message: dict = {"role": "user", "content": text}
    if timestamp_ms is not None:
        message["timestamp"] = timestamp_ms
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": "2025-03-01T10:00:00.000Z",
            "message": message}


def test_add_then_recent(sessdex, agent_dir: Path) -> None:
    home = agent_dir.parents[1]
    assert sessdex(home / "proj", "history", "add", "  run the tests  ").code == 0
    assert sessdex(home / "other", "history", "add", "git commit -m 'fix'").code == 0
    assert sessdex(home / "other", "history", "add", "git commit -m 'fix'").code == 0  # repeat: dropped
    rows = as_json(sessdex(home, "history", "recent", "--json"))
    assert [(r["prompt"], r["cwd"]) for r in rows] == [
        ("git commit -m 'fix'", str(home / "other")), ("run the tests", str(home / "proj"))]
    text = sessdex(home, "history", "recent", "-n", "1")
    assert text.code == 0
    assert text.out.count("\n") == 1 and "~/other  git commit -m 'fix'" in text.out


def test_add_reads_stdin_and_takes_a_cwd(sessdex, agent_dir: Path) -> None:
    home = agent_dir.parents[1]
    assert sessdex(home, "history", "add", "-", "--cwd", str(home / "proj"), stdin="line one\nline two\n").code == 0
    rows = as_json(sessdex(home, "history", "recent", "--json"))
    assert [(r["prompt"], r["cwd"]) for r in rows] == [("line one\nline two", str(home / "proj"))]
    assert "line one line two" in sessdex(home, "history", "recent").out


def test_search_here_json_and_limit(sessdex, agent_dir: Path) -> None:
    home = agent_dir.parents[1]
    for cwd, prompt in ((home / "proj", "refactor commitment logic"), (home / "other", "git commit all"),
                        (home / "proj", "git commit the rest")):
        assert sessdex(cwd, "history", "add", prompt).code == 0
    hits = as_json(sessdex(home, "history", "search", "commit", "--json"))
    assert [h["prompt"] for h in hits] == ["git commit the rest", "git commit all", "refactor commitment logic"]
    assert hits[0]["snippet"] == "git commit the rest" and hits[0]["highlights"] == [[4, 10]]
    here = as_json(sessdex(home / "proj", "history", "search", "git", "com", "--here", "--json"))
    assert [h["prompt"] for h in here] == ["git commit the rest"]
    assert len(as_json(sessdex(home, "history", "search", "commit", "-n", "1", "--json"))) == 1
    fallback = sessdex(home, "history", "search", "mit")
    assert fallback.code == 0 and fallback.out.count("\n") == 3
    assert sessdex(home, "history", "search", "zebra").out == ""


@pytest.mark.parametrize("query", ['NEAR("a*', "(((", "-", 'say "hi', "🎉", "AND OR"])
def test_search_with_hostile_input_is_calm(sessdex, agent_dir: Path, query: str) -> None:
    home = agent_dir.parents[1]
    assert sessdex(home, "history", "add", "say hi AND bye").code == 0
    outcome = sessdex(home, "history", "search", query)
    assert outcome.code == 0 and outcome.err == ""


def test_import_backfills_from_session_files_once(sessdex, agent_dir: Path) -> None:
    home = agent_dir.parents[1]
    sessions = agent_dir / "sessions"
    header = {"type": "session", "version": 3, "id": "0123456789abcdef", "timestamp": "2025-03-01T10:00:00.000Z",
              "cwd": str(home / "proj")}
    write_session(sessions / "--proj--" / "a.jsonl", str(home / "proj"), [
        header,
        user_message("00000001", "  deploy the staging server ", 1_740_823_200_000),
        {"type": "message", "id": "00000002", "parentId": "00000001", "timestamp": "2025-03-01T10:00:01.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "not a prompt"}]}},
        "{torn line",
        user_message("00000003", [{"type": "text", "text": "rotate"}, {"type": "image", "data": "x"},
                                  {"type": "text", "text": "the keys"}], None),
    ])
    write_session(sessions / "nested" / "deeper" / "b.jsonl", str(home / "other"), [
        {"type": "title", "title": "Other work"},
        dict(header, id="fedcba9876543210", cwd=str(home / "other")),
        user_message("00000001", "write the changelog", 1_740_909_600_000),
    ])
    write_session(sessions / "--proj--" / "broken.jsonl", "", [{"type": "message", "id": "x"}])
    first = sessdex(home, "history", "import")
    assert first.code == 0, first.err
    assert first.out == ("Imported 3 new prompt(s) of 3 found in 2 session file(s); "
                         "1 file(s) without a valid session header skipped.\n")
    again = sessdex(home, "history", "import")
    assert again.out.startswith("Imported 0 new prompt(s) of 3 found")
    rows = as_json(sessdex(home, "history", "recent", "--json"))
    assert [(r["prompt"], r["cwd"], r["created"]) for r in rows] == [
        ("write the changelog", str(home / "other"), "2025-03-02T10:00:00.000Z"),
        ("rotate the keys", str(home / "proj"), "2025-03-01T10:00:00.000Z"),  # same second as its entry's ISO time
        ("deploy the staging server", str(home / "proj"), "2025-03-01T10:00:00.000Z"),
    ]


def test_import_without_sessions(sessdex, agent_dir: Path) -> None:
    outcome = sessdex(agent_dir.parents[1], "history", "import")
    assert outcome.code == 0 and outcome.out.startswith("Imported 0 new prompt(s) of 0 found in 0 session file(s)")


def test_bad_database_is_one_line_and_left_alone(sessdex, agent_dir: Path) -> None:
    agent_dir.mkdir(parents=True)
    (agent_dir / "history.db").write_bytes(b"garbage" * 1000)
    outcome = sessdex(agent_dir.parents[1], "history", "recent")
    assert outcome.code == 1
    assert outcome.err.startswith("sessdex: cannot open the prompt history") and outcome.err.count("\n") == 1
    assert "Traceback" not in outcome.err
    assert (agent_dir / "history.db").read_bytes() == b"garbage" * 1000


def test_bad_options_are_usage_errors(sessdex, agent_dir: Path) -> None:
    home = agent_dir.parents[1]
    assert sessdex(home, "history", "recent", "-n", "0").code == 2
    assert sessdex(home, "history", "search").code == 2


def test_shares_the_agents_file(sessdex, agent_dir: Path) -> None:
    home = agent_dir.parents[1]
    assert sessdex(home, "history", "add", "from the shell").code == 0
    connection = sqlite3.connect(agent_dir / "history.db")
    connection.execute("INSERT INTO history (prompt, cwd) VALUES ('from the agent', '/x')")
    connection.commit()
    connection.close()
    hits = as_json(sessdex(home, "history", "search", "from", "--json"))
    assert {h["prompt"] for h in hits} == {"from the shell", "from the agent"}


def test_listing_cuts_by_grapheme_cluster_to_the_width(sessdex, agent_dir: Path, monkeypatch) -> None:
    home = agent_dir.parents[1]
    assert sessdex(home / "proj", "history", "add", "family 👨‍👩‍👧 " * 12).code == 0
    monkeypatch.setenv("COLUMNS", "50")
    line = sessdex(home, "history", "recent").out.rstrip("\n")
    assert display_width(line) <= 50 and line.endswith("…")
    assert not line.removesuffix("…").endswith(("\u200d", "👨", "👩"))  # the family is kept whole or dropped whole
