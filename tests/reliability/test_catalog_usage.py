"""Trials of bad arguments: every usage error is one line and exit 2;
search takes any bytes as words, refuses queries longer than anyone types, and one huge message cannot
make it slow (the catalog stores a bounded prefix of each message's text).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from sessdex.catalog.index.indexer import MESSAGE_TEXT_MAX_CHARS
from sessdex.core.text import MAX_QUERY_WORDS
from tests.core.sessiontree import BASE_MS, assistant, user
from tests.reliability.catalog_support import SESSDEX, Tree, make_tree, run_sessdex, trial_env

pytestmark = pytest.mark.reliability


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    tree.session(tree.project("proj"), "ab12000000000001", [user("fix the parser"), assistant("done")],
                 mtime_ms=BASE_MS)
    return tree


USAGE_ERRORS = [
    ("recent", "-n", "0"),
    ("recent", "-n", "-1"),
    ("recent", "--limit=abc"),
    ("recent", "-n", "99999999999999999999999"),
    ("recent", "--limit", "99999999999999999999999"),
    ("search",),
    ("search", "-n", "99999999999999999999999", "parser"),
    ("no-such-command",),
    ("resume", "a", "b"),
    ("history", "add"),
    ("history", "recent", "-n", "99999999999999999999999"),
    ("list", "--no-such-option"),
]


@pytest.mark.parametrize("args", USAGE_ERRORS, ids=" ".join)
def test_a_usage_error_is_one_line_and_exit_2(tree: Tree, args) -> None:
    result = run_sessdex(tree, *args, cwd=tree.project("proj"))
    assert result.code == 2, (result.code, result.err)
    assert result.one_line_error and result.out == "", result.err


def test_an_agent_dir_that_is_a_file_is_one_line_and_exit_2(tree: Tree) -> None:
    a_file = tree.root / "not-a-folder"
    a_file.write_text("x")
    for args in (("list",), ("recent",), ("resume", "ab12"), ("index",)):
        process = subprocess.run([str(SESSDEX), "--agent-dir", str(a_file), *args], env=trial_env(tree),
                                 capture_output=True, text=True, timeout=60, cwd=tree.project("proj"))
        assert process.returncode == 2, (args, process.stderr)
        assert process.stderr.count("\n") == 1 and "Traceback" not in process.stderr, (args, process.stderr)


@pytest.mark.parametrize("word", [os.fsdecode(b"pars\xff"), os.fsdecode(b"\xc3(parser\xe2\x82")])
def test_search_takes_undecodable_bytes_and_lone_surrogates(tree: Tree, word: str) -> None:
    process = subprocess.run([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "search", os.fsencode(word)],
                             env=trial_env(tree), capture_output=True, timeout=60, cwd=tree.project("proj"))
    assert process.returncode in (0, 1), process.stderr
    assert b"Traceback" not in process.stderr
    added = subprocess.run([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "history", "add", "parser x"],
                           env=trial_env(tree), capture_output=True, timeout=60)
    assert added.returncode == 0, added.stderr  # a history to search: reading creates none
    history = subprocess.run([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "history", "search",
                              os.fsencode(word)], env=trial_env(tree), capture_output=True, timeout=60)
    assert history.returncode == 0 and b"Traceback" not in history.stderr, history.stderr


@pytest.mark.parametrize("command", [("search", "--json"), ("history", "search", "--json")])
def test_a_pasted_stack_trace_is_searched_by_its_most_selective_words(tree: Tree, command) -> None:
    project = tree.project("proj")
    trace = " ".join(f'File "/src/module{number}.py", line {number}, in handler{number}' for number in range(40))
    tree.session(project, "cd34000000000002", [user(trace), assistant("ok")], mtime_ms=BASE_MS + 1)
    assert run_sessdex(tree, "history", "add", trace, cwd=project).code == 0
    result = run_sessdex(tree, *command, *(trace.split() * 10), cwd=project)
    assert result.code == 0, result.err
    assert result.err.count("\n") == 1 and "most selective words" in result.err, result.err
    found = json.loads(result.out)
    assert found and ("cd34000000000002" in [hit.get("id") for hit in found] or command[0] == "history")


@pytest.mark.parametrize("command", [("search",), ("history", "search")])
def test_a_megabyte_word_answers_at_once(tree: Tree, command) -> None:
    result = run_sessdex(tree, *command, "parser" * 20_000, cwd=tree.project("proj"), timeout=20)
    assert result.code in (0, 1) and "Traceback" not in result.err, result.err
    assert "most selective words" in result.err


def test_the_longest_query_kept_whole_still_searches(tree: Tree) -> None:
    words = ["parser"] * MAX_QUERY_WORDS
    result = run_sessdex(tree, "search", "--json", *words, cwd=tree.project("proj"))
    assert result.code == 0, result.err
    assert "selective" not in result.err
    assert [hit["id"] for hit in json.loads(result.out)] == ["ab12000000000001"]


def test_one_huge_message_is_stored_and_searched_up_to_the_cap(tree: Tree) -> None:
    project = tree.project("proj")
    huge = "needle " + "haystack " * ((MESSAGE_TEXT_MAX_CHARS * 3) // 9) + "tailword"
    tree.session(project, "cd34000000000002", [user("big one"), assistant(huge)], mtime_ms=BASE_MS + 1)
    found = run_sessdex(tree, "search", "--json", "needle", cwd=project)
    assert found.code == 0, found.err
    assert [hit["id"] for hit in json.loads(found.out)] == ["cd34000000000002"]
    connection = sqlite3.connect(tree.paths.agent_dir / "catalog.db")
    try:
        longest = connection.execute("SELECT max(length(text)) FROM messages").fetchone()[0]
    finally:
        connection.close()
    assert longest == MESSAGE_TEXT_MAX_CHARS
    beyond = run_sessdex(tree, "search", "tailword", cwd=project)  # past the cap: not in the catalog
    assert beyond.code == 0 and "cd34" not in beyond.out
