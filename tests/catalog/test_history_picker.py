"""`sessdex history` on a terminal: the interactive search of the prompt history, driven in tmux, alone and from
the key `sessdex init --history-key` binds in bash, zsh and fish."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.catalog.test_shell_init import BIN, SHELLS, Shell, start_shell, tree  # noqa: F401 (fixtures)
from tests.core.sessiontree import Tree

pytestmark = pytest.mark.skipif(not Path("/usr/bin/tmux").exists() and not Path("/bin/tmux").exists(),
                                reason="tmux is not installed (scripts/test installs it)")

PROMPTS = (("proj", "fix the parser in src/parse.py"), ("other", "deploy the api to staging"),
           ("proj", "write tests for the parser"), ("other", "explain the login flow"))


def add_prompts(sandbox: Tree) -> None:
    """The prompts, oldest first, each sent from its directory (through `sessdex history add`)."""
    environment = {**os.environ, "HOME": str(sandbox.home), "PI_CODING_AGENT_DIR": str(sandbox.paths.agent_dir)}
    for directory, prompt in PROMPTS:
        subprocess.run([str(BIN / "sessdex"), "history", "add", prompt], cwd=sandbox.home / directory, check=True,
                       env=environment, timeout=30)


def last_line(screen: str) -> str:
    lines = screen.rstrip().splitlines()
    return lines[-1] if lines else ""


def test_history_search_fuzzy_full_text_modes_choice_and_cancel(start_shell, tree: Tree) -> None:  # noqa: F811
    add_prompts(tree)
    pane: Shell = start_shell("bash", directory=tree.home / "proj")
    out = tree.root / "chosen.txt"
    pane.run(f"sessdex history > {out}; echo st=$?")
    screen = pane.wait_for(lambda s: "history>" in s and "explain the login flow" in s, "the history search")
    assert "all directories · fuzzy" in screen and re.search(r" \d+s  explain the login flow", screen)
    rows = [line for line in screen.splitlines() if "the" in line and "history>" not in line]
    assert "explain the login flow" in rows[0] and "fix the parser" in rows[-1]  # newest first
    pane.keys("parser fix", literal=True)  # terms in any order
    screen = pane.wait_for(lambda s: " 1 · " in s, "one fuzzy match")
    assert "fix the parser in src/parse.py" in screen and "write tests" not in screen
    pane.keys("C-u")
    pane.keys("C-r")  # this directory only
    screen = pane.wait_for(lambda s: "this directory" in s, "the directory mode")
    assert "fix the parser" in screen and "write tests for the parser" in screen and "deploy" not in screen
    pane.keys("C-r", "C-s")  # every directory, full-text
    pane.keys("the", literal=True)
    screen = pane.wait_for(lambda s: "all directories · full-text" in s and " 4 · " in s, "the full-text mode")
    pane.keys(" api", literal=True)
    pane.wait_for(lambda s: " 1 · " in s and "deploy the api" in s, "one full-text match")
    pane.keys("Enter")
    pane.wait_for(lambda s: "st=0" in s, "the choice")
    assert out.read_text() == "deploy the api to staging\n"

    pane.run("clear")
    pane.run(f"sessdex history --query tests > {out}; echo st=$?")
    pane.wait_for(lambda s: "history> tests" in s and " 1 · " in s, "the search started with --query")
    pane.keys("Escape")
    pane.wait_for(lambda s: "st=130" in s, "status 130 after a cancel")
    assert out.read_text() == ""


def test_without_a_history_db_the_search_says_how_to_fill_it(start_shell, tree: Tree) -> None:  # noqa: F811
    pane: Shell = start_shell("bash", directory=tree.home / "proj")
    pane.run("sessdex history; echo st=$?")
    screen = pane.wait_for(lambda s: "\nst=" in s, "the refusal")
    assert "no prompt history yet" in screen and "`sessdex history import`" in screen and "st=1" in screen
    pane.run("sessdex history import && sessdex history < /dev/null | head -1")
    pane.wait_for(lambda s: "Imported 3 new prompt(s)" in s and "~/proj  ship it" in s,
                  "the import, then the prompts printed without a terminal")


@pytest.mark.parametrize("shell", SHELLS)
def test_the_history_key_puts_the_chosen_prompt_on_the_command_line(start_shell, tree: Tree,  # noqa: F811
                                                                    shell: str) -> None:
    add_prompts(tree)
    pane: Shell = start_shell(shell, "--history-key ctrl-r", directory=tree.home / "proj")
    pane.keys("login flow", literal=True)  # the line typed so far starts the search
    pane.keys("C-r")
    pane.wait_for(lambda s: "history> login flow" in s and " 1 · " in s, "the search with the typed line")
    pane.keys("Enter")
    pane.wait_for(lambda s: last_line(s).endswith("$ explain the login flow") and "history>" not in s,
                  "the prompt on the command line")
    pane.keys("C-u")
    pane.keys("kept", literal=True)
    pane.keys("C-r")
    pane.wait_for(lambda s: "history> kept" in s, "the search")
    pane.keys("Escape")
    pane.wait_for(lambda s: last_line(s).endswith("$ kept") and "history>" not in s, "the line kept after a cancel")
