"""Trials of the prompt history from the shell: a prompt is never lost to another writer's lock, and search
reads each word of the query as a phrase (the agent's rule).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.catalog_support import Tree, make_tree, run_sessdex, trial_env

pytestmark = pytest.mark.reliability

HOLD_SECONDS = 7  # longer than the 5 s a write used to wait before it gave up (and dropped the prompt)
HOLDER = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
connection.execute("INSERT INTO history (prompt, created_at, cwd) VALUES ('from the agent', 1, NULL)")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("COMMIT")
"""


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return make_tree(tmp_path)


def _prompts(tree: Tree) -> list[str]:
    connection = sqlite3.connect(tree.paths.agent_dir / "history.db")
    try:
        return [row[0] for row in connection.execute("SELECT prompt FROM history ORDER BY id")]
    finally:
        connection.close()


def test_history_add_waits_out_another_process_holding_the_write_lock(tree: Tree) -> None:
    assert run_sessdex(tree, "history", "add", "first prompt").code == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tree.paths.agent_dir / "history.db"),
                               str(HOLD_SECONDS)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        started = time.monotonic()
        added = run_sessdex(tree, "history", "add", "typed while the agent writes")
        waited = time.monotonic() - started
    finally:
        holder.communicate(timeout=30)
    assert added.code == 0 and added.err == "", added.err
    assert waited > 1  # it really did meet the lock
    assert _prompts(tree) == ["first prompt", "from the agent", "typed while the agent writes"]


@pytest.mark.parametrize("query, expected", [
    ("to/file", ["copy path/to/file now"]),
    ("path/to/fi", ["copy path/to/file now"]),
    ("file to", ["copy path/to/file now", "file to archive"]),
    ("to/file archive", []),
    ("archive file", ["file to archive"]),
    ("mit", ["commit the change"]),  # nothing starts a word with it: the substring fallback answers
])
def test_history_search_takes_each_word_as_a_phrase(tree: Tree, query: str, expected: list[str]) -> None:
    for prompt in ("copy path/to/file now", "file to archive", "commit the change"):
        assert run_sessdex(tree, "history", "add", prompt).code == 0
    result = run_sessdex(tree, "history", "search", "--json", *query.split())
    assert result.code == 0, result.err
    assert sorted(item["prompt"] for item in json.loads(result.out)) == sorted(expected)


def test_history_import_skips_bad_files_fifos_and_devices(tree: Tree) -> None:
    from tests.core.sessiontree import assistant, header, jsonl, user, write_file

    project = tree.project("proj")
    folder = tree.project_dir(project)
    tree.session(project, "good0000000000001", [user("the prompt to import"), assistant("ok")])
    write_file(folder / "x_deep.jsonl", jsonl([header("deep0000000000002", project), user("deep one")])
               + b'{"type":"message","x":' + b"[" * 1100 + b"]" * 1100 + b"}\n")
    huge_stamp = user("a stamp out of range")
    huge_stamp["message"]["timestamp"] = 10**400
    write_file(folder / "x_stamp.jsonl", jsonl([header("stamp000000000003", project)])
               + json.dumps(huge_stamp).encode() + b"\n")
    os.mkfifo(folder / "x_fifo.jsonl")
    (folder / "x_zero.jsonl").symlink_to("/dev/zero")
    result = run_sessdex(tree, "history", "import", timeout=60)
    assert result.code == 0 and "Traceback" not in result.err, result.err
    assert "the prompt to import" in _prompts(tree)
    # The line with the out-of-range stamp is the core parser's to keep or skip; either way nothing failed.


def test_a_prompt_that_cannot_be_written_in_time_is_said_in_one_line(tree: Tree) -> None:
    """Past the wait (shortened to 1 s here: the real one is 30 s) the prompt is lost: said once, exit 1."""
    assert run_sessdex(tree, "history", "add", "first prompt").code == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tree.paths.agent_dir / "history.db"), "5"],
                              stdout=subprocess.PIPE, text=True)
    short_wait = ("import sys; import sessdex.catalog.cli.history_commands as commands; "
                  "commands.SHELL_BUSY_TIMEOUT_SECONDS = 1; from sessdex.catalog.cli.entry import main; main()")
    try:
        assert holder.stdout.readline() == "locked\n"
        process = subprocess.run([sys.executable, "-c", short_wait, "--agent-dir", str(tree.paths.agent_dir),
                                  "history", "add", "lost prompt"], capture_output=True, text=True, timeout=60,
                                 env=trial_env(tree))
    finally:
        holder.communicate(timeout=30)
    assert process.returncode == 1, process.stderr
    assert process.stderr.count("\n") == 1 and "not recorded" in process.stderr, process.stderr
