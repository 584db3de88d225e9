"""`sessdex init bash|zsh|fish` in real shells under tmux: `xr`, the key binding, cancel, `--here`, tab completion.

A stand-in agent (`$SESSDEX_AGENT_CMD`) records its working directory and arguments, so each test checks where the
shell function ran the agent and with which file. Each shell test is skipped only when that shell is not installed
(`scripts/test` installs zsh and fish next to tmux, so CI runs them all).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, user

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
WAIT_S = 20.0
SHELLS = ("bash", "zsh", "fish")

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/test installs it)")


def needs(shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here (scripts/test installs it)")


@dataclass
class Shell:
    """An interactive shell in its own tmux server, 120x30."""

    socket: str
    record: Path

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.socket, *args], check=True, capture_output=True, text=True,
                              timeout=10).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "sh")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "sh", *(["-l"] if literal else []), *keys)

    def run(self, line: str) -> None:
        self.keys(line, literal=True)
        self.keys("Enter")

    def wait_for(self, condition: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT_S
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if condition(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"the screen never showed {what}; last screen:\n{screen}")

    def agent_runs(self) -> list[dict[str, object]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def wait_for_agent(self, count: int = 1) -> dict[str, object]:
        deadline = time.monotonic() + WAIT_S
        while len(self.agent_runs()) < count:
            assert time.monotonic() < deadline, f"the agent never ran; screen:\n{self.screen()}"
            time.sleep(0.05)
        return self.agent_runs()[count - 1]


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    proj, other = tree.project("proj"), tree.project("other")
    tree.session(proj, "aa11000000000001", [user("fix the parser please"), assistant("done")], mtime_ms=BASE_MS)
    tree.session(proj, "bb22000000000002", [user("ship it"), assistant("ok")],
                 head=header("bb22000000000002", proj, title="Deploy the API"), mtime_ms=BASE_MS + 60_000)
    tree.session(other, "dd44000000000004", [user("elsewhere unicorn work"), assistant("fine")],
                 mtime_ms=BASE_MS + 30_000)
    return tree


RECORDER = ('import json, os, sys; record = open(os.environ["AGENT_RECORD"], "a"); '
            'print(json.dumps({"cwd": os.getcwd(), "args": sys.argv[1:]}), file=record)')


def stand_in_agent() -> str:
    """A shell script that records its working directory and arguments, one JSON line per run."""
    return f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -c {shlex.quote(RECORDER)} "$@"\n'


@pytest.fixture
def start_shell(tree: Tree, tmp_path: Path) -> Iterator[Callable[..., Shell]]:
    """Start `shell` with `sessdex init <shell> <init_args>` evaluated, in `directory` (default ~/other)."""
    sockets: list[str] = []

    def start(shell: str, init_args: str = "", directory: Path | None = None) -> Shell:
        needs(shell)
        number = len(sockets)
        socket = str(tmp_path / f"tmux-{number}.sock")
        sockets.append(socket)
        record = tmp_path / f"agent-{number}.jsonl"
        agent = tmp_path / "fake-agent"
        agent.write_text(stand_in_agent())
        agent.chmod(0o755)
        config = tmp_path / f"config-{number}"
        config.mkdir()
        init = f"sessdex init {shell} {init_args}".strip()
        environment = {"HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir),
                       "PATH": f"{BIN}:{os.environ['PATH']}", "TERM": "xterm-256color",
                       "SESSDEX_AGENT_CMD": str(agent), "AGENT_RECORD": str(record),
                       "XDG_CONFIG_HOME": str(config), "XDG_DATA_HOME": str(config / "data"),
                       "ZDOTDIR": str(config), "INPUTRC": "/dev/null", "SESSDEX_AUTOWATCH": "0"}
        if shell == "bash":
            rc = config / "bashrc"
            rc.write_text(f"PS1='$ '\neval \"$({init})\"\n")
            command = f"bash --noprofile --rcfile {shlex.quote(str(rc))} -i"
        elif shell == "zsh":
            (config / ".zshrc").write_text(f"PROMPT='$ '\nautoload -Uz compinit && compinit -u\neval \"$({init})\"\n")
            command = "zsh -i"
        else:
            (config / "fish").mkdir()
            (config / "fish" / "config.fish").write_text(
                f"function fish_prompt; echo -n '$ '; end\nfunction fish_greeting; end\n{init} | source\n")
            command = "fish -i"
        exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in environment.items())
        pane = Shell(socket, record)
        pane.tmux("-f", "/dev/null", "new-session", "-d", "-s", "sh", "-x", "120", "-y", "30",
                  "-c", str(directory or tree.home / "other"), f"env -i {exports} {command}")
        pane.wait_for(lambda s: "$" in s, "the prompt")
        return pane

    try:
        yield start
    finally:
        for socket in sockets:
            subprocess.run(["tmux", "-S", socket, "kill-server"], check=False, capture_output=True, timeout=10)


def session_file(tree: Tree, project: str, session_id: str) -> str:
    return str(tree.paths.project_session_dir(tree.home / project) / f"2025-01-01T00-00-00-000Z_{session_id}.jsonl")


@pytest.mark.parametrize("shell", SHELLS)
def test_xr_prefix_opens_the_session_in_its_own_directory(start_shell, tree: Tree, shell: str) -> None:
    pane = start_shell(shell)
    pane.run("xr aa11")
    run = pane.wait_for_agent()
    assert run == {"cwd": str(tree.home / "proj"), "args": ["--resume", session_file(tree, "proj", "aa11000000000001")]}
    assert len(list(tree.paths.project_session_dir(tree.home / "other").glob("*.jsonl"))) == 1  # nothing forked


@pytest.mark.parametrize("shell", SHELLS)
def test_xr_picker_choice_cancel_and_key(start_shell, tree: Tree, shell: str) -> None:
    pane = start_shell(shell, directory=tree.home / "proj")
    pane.run("xr")
    pane.wait_for(lambda s: "Pick a session" in s and "Deploy the API" in s, "the picker")
    pane.keys("deploy", literal=True)
    pane.wait_for(lambda s: "1 of 2" in s, "the filtered picker")
    pane.keys("Enter")
    assert pane.wait_for_agent() == {"cwd": str(tree.home / "proj"),
                                     "args": ["--resume", session_file(tree, "proj", "bb22000000000002")]}

    pane.run("clear")
    pane.run("xr; echo st=$status" if shell == "fish" else "xr; echo st=$?")
    pane.wait_for(lambda s: "Pick a session" in s, "the picker")
    pane.keys("Escape")
    pane.wait_for(lambda s: "st=130" in s, "status 130 after a cancel")
    assert len(pane.agent_runs()) == 1  # the cancel ran nothing

    pane.run("clear")
    pane.wait_for(lambda s: "st=130" not in s, "a clear screen")
    pane.keys("echo kept", literal=True)  # a line being typed when the key is pressed is not lost
    pane.keys("M-j")
    pane.wait_for(lambda s: "Pick a session" in s, "the picker opened by Alt+J")
    pane.keys("Enter")
    assert pane.wait_for_agent(2)["args"] == ["--resume", session_file(tree, "proj", "bb22000000000002")]
    if shell == "bash":
        pane.keys("C-y")  # bash keeps it in the kill ring
    pane.wait_for(lambda s: s.rstrip().splitlines()[-1].endswith("$ echo kept"), "the typed line back at the prompt")


def test_xr_path_opens_the_file_in_its_sessions_directory(start_shell, tree: Tree) -> None:
    pane = start_shell("bash", directory=tree.home)
    target = session_file(tree, "other", "dd44000000000004")
    pane.run(f"xr {target}; echo st=$?")
    assert pane.wait_for_agent() == {"cwd": str(tree.home / "other"), "args": ["--resume", target]}
    pane.run("xr ffff; echo st=$?")
    pane.wait_for(lambda s: 'Session "ffff" not found.' in s and "st=1" in s, "the refusal and status 1")
    assert len(pane.agent_runs()) == 1


@pytest.mark.parametrize("shell", SHELLS)
def test_xr_here_forks_into_the_current_directory(start_shell, tree: Tree, shell: str) -> None:
    pane = start_shell(shell, directory=tree.home / "proj")
    pane.run("xr --here dd44")
    run = pane.wait_for_agent()
    assert run["cwd"] == str(tree.home / "proj")
    forked = Path(run["args"][1])  # type: ignore[index]
    assert forked.parent == tree.paths.project_session_dir(tree.home / "proj") and forked.is_file()
    assert b'"parentSession":' in forked.read_bytes()


@pytest.mark.parametrize("shell", SHELLS)
def test_tab_completes_session_ids(start_shell, tree: Tree, shell: str) -> None:
    pane = start_shell(shell)
    pane.keys("xr aa", literal=True)
    pane.keys("Tab")
    pane.wait_for(lambda s: "xr aa11000000000001" in s, "the completed id")
    pane.keys("C-u")
    pane.keys("sessdex resume dd", literal=True)
    pane.keys("Tab")
    pane.wait_for(lambda s: "sessdex resume dd44000000000004" in s, "the completed id for sessdex resume")


@pytest.mark.parametrize("shell", SHELLS)
def test_tab_completes_command_names_and_ids_after_every_session_command(start_shell, tree: Tree, shell: str) -> None:
    pane = start_shell(shell)
    pane.keys("sessdex entr", literal=True)
    pane.keys("Tab")
    pane.wait_for(lambda s: "sessdex entries" in s, "the completed command name")
    for command in ("view", "rename", "trash", "context", "entries"):
        pane.keys("C-u")
        pane.keys(f"sessdex {command} dd", literal=True)
        pane.keys("Tab")
        pane.wait_for(lambda s, command=command: f"sessdex {command} dd44000000000004" in s,
                      f"the completed id for sessdex {command}")


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_tab_completes_a_title_word_to_its_session(start_shell, tree: Tree, shell: str) -> None:
    pane = start_shell(shell)
    pane.keys("xr unicorn", literal=True)
    pane.keys("Tab")
    pane.wait_for(lambda s: "xr dd44000000000004" in s, "the session whose first message holds the word")


HOSTILE_IDS = ("p$(touch${IFS}pwn1)x", "q`touch${IFS}pwn2`", "r;touch${IFS}pwn3;")


@pytest.mark.parametrize("shell", SHELLS)
def test_a_completed_hostile_id_runs_nothing(start_shell, tree: Tree, shell: str) -> None:
    proj = tree.project("proj")
    for number, session_id in enumerate(HOSTILE_IDS):
        tree.session(proj, session_id, [user(f"hostile {number}"), assistant("ok")], mtime_ms=BASE_MS + number)
    pane = start_shell(shell)
    for count, session_id in enumerate(HOSTILE_IDS, start=1):
        pane.keys(f"xr {session_id[0]}", literal=True)
        pane.keys("Tab")
        pane.wait_for(lambda s: "touch" in s, "the completed hostile id")
        pane.keys("Enter")
        run = pane.wait_for_agent(count)
        assert run["args"][0] == "--resume" and session_id in str(run["args"][1]), run  # type: ignore[index]
        pane.run("clear")
    planted = sorted(str(path) for path in tree.root.rglob("pwn*"))
    assert planted == [], planted


def test_cmd_names_the_integration_uses_are_refused(tree: Tree) -> None:
    sessdex = str(BIN / "sessdex")
    for name in ("__sessdex_resume", "__sessdex_complete_ids", "sessdex", "xcsh", "cd", "command", "builtin"):
        done = subprocess.run([sessdex, "init", "bash", "--cmd", name], capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and done.stdout == "", name
        assert done.stderr.count("\n") == 1 and "uses that name" in done.stderr, done.stderr


def test_init_and_completion_build_no_parser_and_no_picker(tree: Tree) -> None:
    probe = ("import sys; from sessdex.catalog.cli.entry import _run; _run(sys.argv[1:]); "
             "print('argparse' in sys.modules, 'prompt_toolkit' in sys.modules, file=sys.stderr)")
    environment = {**os.environ, "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir)}
    for args in (["init", "bash"], ["init", "fish"], ["complete-sessions", "aa"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=environment,
                              timeout=30)
        assert done.stderr.strip() == "False False", args
    listed = subprocess.run([sys.executable, "-c", probe, "complete-sessions", "deploy"], capture_output=True,
                            text=True, env=environment, timeout=30).stdout
    assert listed == "bb22000000000002\tDeploy the API\n"


def test_init_usage_errors(tree: Tree) -> None:
    sessdex = str(BIN / "sessdex")
    for args in (["init"], ["init", "tcsh"], ["init", "bash", "--cmd", "no space"], ["init", "bash", "--key", "f5"]):
        done = subprocess.run([sessdex, *args], capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("sessdex: "), args
    named = subprocess.run([sessdex, "init", "zsh", "--cmd", "resume-it", "--no-key"], capture_output=True, text=True,
                           timeout=30).stdout
    assert "resume-it() {" in named and "bindkey" not in named


def test_ids_complete_from_file_names_while_the_catalog_lacks_them(tree: Tree) -> None:
    """A catalog that does not hold every file yet (a first index still running) completes an id from the file
    names, confirmed by the header, newest first."""
    sessdex = str(BIN / "sessdex")
    environment = {**os.environ, "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir), "HOME": str(tree.home)}
    assert subprocess.run([sessdex, "index"], env=environment, capture_output=True, timeout=60).returncode == 0
    proj = tree.project("proj")
    tree.session(proj, "ee55000000000001", [user("older one"), assistant("ok")], mtime_ms=BASE_MS + 10)
    tree.session(proj, "ee55000000000002", [user("newer one"), assistant("ok")], mtime_ms=BASE_MS + 20)
    done = subprocess.run([sessdex, "complete-sessions", "ee5"], env=environment, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["ee55000000000002", "ee55000000000001"]
