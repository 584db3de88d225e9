"""`sessdex list | recent | resume | continue`, run as a user would: argv in, stdout/stderr/exit code out."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sessdex.core.breadcrumbs as breadcrumbs
from sessdex.catalog.cli.output import Column, render_table
from sessdex.catalog.tui.width import display_width, fit
from sessdex.core.breadcrumbs import write_breadcrumb
from sessdex.core.discovery import id_prefix_length
from tests.cli_support import Outcome, run_cli
from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, user

REPO = Path(__file__).resolve().parents[2]
TERMINAL_VARS = ("KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Tree:
    tree = make_tree(tmp_path)
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.setenv("TMPDIR", str(tree.root / "tmp"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    for name in TERMINAL_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(breadcrumbs, "current_tty_path", lambda: None)
    return tree


@pytest.fixture
def sessdex(tree: Tree, monkeypatch, capsys):
    def run(cwd: Path, *args: str) -> Outcome:
        monkeypatch.chdir(cwd)
        return run_cli(["--agent-dir", str(tree.paths.agent_dir), *args], capsys)
    return run


def populate(tree: Tree) -> dict[str, Path]:
    """proj: two sessions and an empty one; other: one session."""
    proj, other = tree.project("proj"), tree.project("other")
    return {
        "old": tree.session(proj, "ab12000000000001", [user("fix the parser"), assistant("done")],
                            mtime_ms=BASE_MS),
        "new": tree.session(proj, "ab34000000000002", [user("second task"), assistant("ok")],
                            head=header("ab34000000000002", proj, title="Named session"), mtime_ms=BASE_MS + 60_000),
        "empty": tree.session(proj, "ab56000000000003", [], mtime_ms=BASE_MS + 120_000),
        "other": tree.session(other, "cd78000000000004", [user("elsewhere work"), assistant("fine")],
                              mtime_ms=BASE_MS + 30_000),
    }


# -- list ------------------------------------------------------------------------------------------

def test_list_shows_this_projects_sessions_as_a_table(tree: Tree, sessdex) -> None:
    populate(tree)
    result = sessdex(tree.home / "proj", "list", "--table")
    assert result.code == 0
    lines = result.out.splitlines()
    # One project's sessions share their cwd: no CWD column.
    assert lines[0].split() == ["ID", "MODIFIED", "MSGS", "COST", "TOKENS", "NAME"]
    assert lines[1].startswith("ab340000  2025-01-01") and lines[1].endswith("Named session")
    assert lines[2].startswith("ab120000") and "fix the parser" in lines[2]
    assert len(lines) == 3  # the empty session and the other project are not listed


def test_list_all_includes_other_projects(tree: Tree, sessdex) -> None:
    populate(tree)
    result = sessdex(tree.home / "proj", "list", "--all", "--table")
    assert result.out.splitlines()[0].split() == ["ID", "MODIFIED", "MSGS", "COST", "TOKENS", "NAME", "CWD"]
    assert [line.split()[0] for line in result.out.splitlines()[1:]] == ["ab340000", "cd780000", "ab120000"]
    assert "~/other" in result.out


def test_list_json_uses_the_agents_field_names(tree: Tree, sessdex) -> None:
    paths = populate(tree)
    result = sessdex(tree.home / "proj", "list", "--json")
    rows = json.loads(result.out)
    assert [row["id"] for row in rows] == ["ab34000000000002", "ab12000000000001"]
    assert rows[0] == {"id": "ab34000000000002", "path": str(paths["new"]), "cwd": str(tree.home / "proj"),
                       "title": "Named session", "name": "Named session", "messageCount": 2, "firstMessage": "second task",
                       "created": "2025-01-01T00:00:00.000Z", "modified": "2025-01-01T00:01:00.000Z",
                       "cost": 0, "totalTokens": 0,
                       "marks": {"pinned": False, "starred": False, "tags": [], "note": None}}
    assert rows[1]["title"] is None


def test_list_table_fits_the_terminal_width(tree: Tree, sessdex, monkeypatch) -> None:
    proj = tree.project("proj" + "-very-long-name" * 5)
    tree.session(proj, "ab12000000000001", [user("a really long first message " * 10)])
    monkeypatch.setenv("COLUMNS", "70")
    result = sessdex(proj, "list")
    assert result.code == 0
    assert all(display_width(line) <= 70 for line in result.out.splitlines())
    assert "…" in result.out
    monkeypatch.delenv("COLUMNS")
    assert max(display_width(line) for line in sessdex(proj, "list").out.splitlines()) > 70


def test_list_without_sessions_says_so(tree: Tree, sessdex) -> None:
    tree.paths.agent_dir.mkdir(parents=True)
    result = sessdex(tree.project("proj"), "list")
    assert (result.code, result.out, result.err) == (0, "", "No sessions found\n")


def test_a_directory_whose_name_is_not_utf8_answers_with_the_sessions_the_agent_filed_for_it(tree: Tree,
                                                                                             sessdex) -> None:
    odd = tree.home / "proj-\udcff"  # the bytes b"proj-\xff", as Python names them
    odd.mkdir()
    as_the_agent_reads_it = tree.home / "proj-\ufffd"
    tree.session(as_the_agent_reads_it, "ab12000000000001", [user("fix the parser"), assistant("done")],
                 mtime_ms=BASE_MS)
    for args in (("list",), ("list", "--json"), ("recent",), ("search", "parser"), ("usage",), ("continue",)):
        result = sessdex(odd, *args)
        assert result.code == 0 and "Traceback" not in result.err, (args, result.err)
        assert "ab12" in result.out or args == ("usage",), (args, result.out)


def test_list_rejects_all_with_session_dir(tree: Tree, sessdex) -> None:
    result = sessdex(tree.project("proj"), "list", "--all", "--session-dir", str(tree.root))
    assert result.code == 2 and "cannot be combined" in result.err


def test_table_helpers() -> None:
    assert fit("日本語テキスト", 7) == "日本語…"
    assert display_width(fit("abc", 6)) == 6
    assert id_prefix_length(["1234567890ab", "1234567890cd"]) == 11
    assert id_prefix_length(["aa", "bb"]) == 8
    # a table without rows is its header line
    assert render_table([Column("ID"), Column("NAME", flexible=True)], [], 40).split() == ["ID", "NAME"]


# -- recent ------------------------------------------------------------------------------------------

def test_recent_lists_newest_first_with_a_limit(tree: Tree, sessdex) -> None:
    populate(tree)
    result = sessdex(tree.home / "proj", "recent", "-n", "2", "--table")
    lines = result.out.splitlines()
    assert lines[0].split() == ["ID", "MODIFIED", "MSGS", "COST", "TOKENS", "NAME"]  # the table of `list`
    assert [line.split()[0] for line in lines[1:]] == ["ab560000", "ab340000"]
    assert "ab56000000000003" in lines[1] and "Named session" in lines[2]


def test_recent_json(tree: Tree, sessdex) -> None:
    paths = populate(tree)
    rows = json.loads(sessdex(tree.home / "proj", "recent", "--json").out)
    assert [row["id"] for row in rows] == ["ab56000000000003", "ab34000000000002", "ab12000000000001"]
    listed = json.loads(sessdex(tree.home / "proj", "list", "--json").out)
    assert set(rows[0]) == set(listed[0])  # the one session object of every listing command
    assert rows[2]["path"] == str(paths["old"]) and rows[2]["name"] == "fix the parser"
    assert rows[2] == next(row for row in listed if row["id"] == rows[2]["id"])
    assert rows[0]["name"] == "ab56000000000003" and rows[0]["messageCount"] == 0


def test_recent_rejects_a_zero_limit(tree: Tree, sessdex) -> None:
    assert sessdex(tree.project("proj"), "recent", "-n", "0").code == 2


# -- resume ------------------------------------------------------------------------------------------

def test_resume_prints_only_the_path(tree: Tree, sessdex) -> None:
    paths = populate(tree)
    result = sessdex(tree.home / "proj", "resume", "ab12")
    assert (result.code, result.out, result.err) == (0, f"{paths['old']}\n", "")


def test_resume_not_found(tree: Tree, sessdex) -> None:
    populate(tree)
    result = sessdex(tree.home / "proj", "resume", "zz")
    assert (result.code, result.out, result.err) == (1, "", 'sessdex: Session "zz" not found.\n')


def test_resume_ambiguous_lists_candidates(tree: Tree, sessdex) -> None:
    populate(tree)
    result = sessdex(tree.home / "proj", "resume", "ab")
    assert result.code == 1 and result.out == ""
    assert 'Session "ab" is ambiguous: it matches 2 sessions:' in result.err
    assert "ab12000000000001" in result.err and "ab34000000000002" in result.err


def test_resume_exact_id_of_empty_session(tree: Tree, sessdex) -> None:
    paths = populate(tree)
    assert sessdex(tree.home / "proj", "resume", "ab56000000000003").out == f"{paths['empty']}\n"


def test_resume_from_other_project_refused(tree: Tree, sessdex) -> None:
    populate(tree)
    for flags in (["--no-fork"], []):  # without a terminal to ask on, no answer means no
        result = sessdex(tree.home / "proj", "resume", "cd78", *flags)
        assert result.code == 1 and result.out == ""
        assert f'sessdex: Session "cd78" is in another project ({tree.home / "other"})' in result.err


def test_resume_from_other_project_forked_with_yes(tree: Tree, sessdex) -> None:
    populate(tree)
    result = sessdex(tree.home / "proj", "resume", "cd78", "--yes")
    assert result.code == 0
    forked = Path(result.out.strip())
    assert forked.parent == tree.paths.project_session_dir(tree.home / "proj")
    assert b'"parentSession":"cd78000000000004"' in forked.read_bytes()
    assert "Forked cd78000000000004" in result.err
    # the fork now belongs to this project
    listed = json.loads(sessdex(tree.home / "proj", "list", "--json").out)
    assert [row["firstMessage"] for row in listed].count("elsewhere work") == 1


def test_resume_yes_and_no_fork_conflict(tree: Tree, sessdex) -> None:
    result = sessdex(tree.project("proj"), "resume", "x", "--yes", "--no-fork")
    assert result.code == 2 and "cannot be combined" in result.err


def test_resume_path_value(tree: Tree, sessdex) -> None:
    paths = populate(tree)
    proj = tree.home / "proj"
    assert sessdex(proj, "resume", str(paths["other"])).out == f"{paths['other']}\n"
    missing = sessdex(proj, "resume", "new.jsonl")
    assert (missing.code, missing.out) == (0, f"{proj / 'new.jsonl'}\n")
    assert "starts a new session" in missing.err


def test_resume_json(tree: Tree, sessdex) -> None:
    paths = populate(tree)
    data = json.loads(sessdex(tree.home / "proj", "resume", "ab12", "--json").out)
    assert data["action"] == "open" and data["path"] == str(paths["old"])
    assert data["id"] == "ab12000000000001" and data["cwd"] == str(tree.home / "proj")
    listed = json.loads(sessdex(tree.home / "proj", "list", "--json").out)
    same = next(row for row in listed if row["id"] == data["id"])
    del same["marks"]  # the listing commands add each session's marks
    assert {key: data[key] for key in same} == same


def test_resume_without_value_and_without_a_terminal_is_one_usage_line(tree: Tree, sessdex) -> None:
    populate(tree)
    listed = sessdex(tree.home / "proj", "resume")
    assert (listed.code, listed.out) == (2, "")
    assert len(listed.err.splitlines()) == 1 and "`sessdex list`" in listed.err  # never the project's list
    assert "ab340000" not in listed.err


# -- continue ----------------------------------------------------------------------------------------

def test_continue_prefers_this_terminals_breadcrumb(tree: Tree, sessdex, monkeypatch) -> None:
    paths = populate(tree)
    proj = tree.home / "proj"
    assert sessdex(proj, "continue").out == f"{paths['empty']}\n"  # newest file, messages or not
    monkeypatch.setenv("TMUX_PANE", "%3")
    write_breadcrumb(tree.paths, proj, paths["old"])
    assert sessdex(proj, "continue").out == f"{paths['old']}\n"
    monkeypatch.setenv("TMUX_PANE", "%4")
    assert sessdex(proj, "continue").out == f"{paths['empty']}\n"


def test_continue_with_nothing_to_continue(tree: Tree, sessdex) -> None:
    tree.paths.agent_dir.mkdir(parents=True)
    result = sessdex(tree.project("proj"), "continue")
    assert result.code == 1 and result.out == "" and "starts a new one" in result.err


# -- as a new user in a real terminal ----------------------------------------------------------------

def _run_in_terminal(args: list[str], cwd: Path, env: dict[str, str], answer: bytes) -> tuple[int, str]:
    """Run the sessdex CLI on a pseudo-terminal, answer its prompt, return exit code and everything shown."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", "from sessdex.catalog.cli.entry import main; main()", *args], cwd=cwd,
                               env=env, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    shown, answered, deadline = b"", False, time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                shown += chunk
                if not answered and b"[y/N]" in shown:
                    os.write(leader, answer)
                    answered = True
            elif process.poll() is not None:
                break
        return process.wait(timeout=10), shown.decode(errors="replace")
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize(("answer", "expected_code"), [(b"y\n", 0), (b"n\n", 1)])
def test_fork_question_is_asked_on_a_terminal(tree: Tree, answer: bytes, expected_code: int) -> None:
    populate(tree)
    env = {**{k: v for k, v in os.environ.items() if k not in TERMINAL_VARS},
           "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir), "PYTHONPATH": str(REPO)}
    code, shown = _run_in_terminal(["resume", "cd78"], tree.home / "proj", env, answer)
    assert "is in another project" in shown and "Fork it into this project?" in shown
    assert code == expected_code
    files = list(tree.paths.project_session_dir(tree.home / "proj").glob("*.jsonl"))
    assert len(files) == (4 if expected_code == 0 else 3)
