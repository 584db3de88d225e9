"""The picker in a real terminal: `sessdex pick` / `sessdex resume` run inside tmux, driven by send-keys.

Each test starts its own tmux server (a socket in the test's temporary folder), types like a user, reads the screen with
capture-pane and kills the server at the end, whatever happens.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, user

REPO = Path(__file__).resolve().parents[2]
SESSDEX = REPO / ".venv" / "bin" / "sessdex"
WAIT_S = 20.0

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/test installs it)")


@dataclass
class Pane:
    """A tmux server with one 120x30 window running a shell command."""

    socket: str
    results: Path

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.socket, *args], check=True, capture_output=True, text=True,
                              timeout=10).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "picker")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "picker", *(["-l"] if literal else []), *keys)

    def wait_for(self, condition: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT_S
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if condition(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"the screen never showed {what}; last screen:\n{screen}")

    def finished(self) -> tuple[int, str, str]:
        """Wait for the command to end; its exit status, stdout and stderr."""
        status_file = self.results / "status"
        deadline = time.monotonic() + WAIT_S
        while not status_file.exists() or not status_file.read_text().strip():
            assert time.monotonic() < deadline, f"the command did not finish; screen:\n{self.screen()}"
            time.sleep(0.05)
        return (int(status_file.read_text()), (self.results / "out").read_text(),
                (self.results / "err").read_text())


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    proj, other = tree.project("proj"), tree.project("other")
    tree.session(proj, "aa11000000000001", [user("fix the parser please"), assistant("done")], mtime_ms=BASE_MS)
    tree.session(proj, "bb22000000000002", [user("ship it"), assistant("ok")],
                 head=header("bb22000000000002", proj, title="Deploy the API"), mtime_ms=BASE_MS + 60_000)
    tree.session(proj, "cc33000000000003", [user("rewrite"), assistant("sure")],
                 head=header("cc33000000000003", proj, title="Parser rewrite"), mtime_ms=BASE_MS + 120_000)
    tree.session(other, "dd44000000000004", [user("elsewhere parser work"), assistant("fine")],
                 mtime_ms=BASE_MS + 30_000)
    return tree


@pytest.fixture
def run_in_tmux(tree: Tree, tmp_path: Path) -> Iterator[Callable[[str], Pane]]:
    """Start `sessdex <args>` (a shell snippet using $SESSDEX) in ~/proj inside a fresh tmux server."""
    sockets: list[str] = []

    def start(command: str, width: int = 120) -> Pane:
        socket = str(tmp_path / f"tmux-{len(sockets)}.sock")
        sockets.append(socket)
        results = tmp_path / f"results-{len(sockets)}"
        results.mkdir()
        environment = {"HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir),
                       "TMPDIR": str(tree.root / "tmp"), "SESSDEX": str(SESSDEX), "TERM": "xterm-256color",
                       "RESULTS": str(results), "SESSDEX_AUTOWATCH": "0"}
        exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in environment.items())
        script = f'( {command} ) >"$RESULTS/out" 2>"$RESULTS/err"; echo $? >"$RESULTS/status"; sleep 60'
        pane = Pane(socket, results)
        pane.tmux("-f", "/dev/null", "new-session", "-d", "-s", "picker", "-x", str(width), "-y", "30",
                  "-c", str(tree.home / "proj"), f"env {exports} sh -c {shlex.quote(script)}")
        return pane

    try:
        yield start
    finally:
        for socket in sockets:
            subprocess.run(["tmux", "-S", socket, "kill-server"], check=False, capture_output=True, timeout=10)


def row_lines(screen: str) -> list[str]:
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if "TITLE / FIRST MESSAGE" in line) + 1
    return [line for line in lines[start:] if line.startswith(("❯ ", "  ")) and line.strip()]


def title_of(line: str) -> str:
    return line[2:].split("  ")[0]


def test_pick_filters_switches_scope_and_prints_the_choice(run_in_tmux, tree: Tree) -> None:
    pane = run_in_tmux('"$SESSDEX" pick')
    screen = pane.wait_for(lambda s: "Pick a session" in s and "Parser rewrite" in s, "the picker")
    assert "◉ This project (~/proj)" in screen and "○ All projects" in screen and "3 of 3" in screen
    rows = row_lines(screen)
    assert rows[0].startswith("❯ Parser rewrite") and "cc330000" in rows[0] and rows[0].rstrip().endswith("$0.00")
    assert "CWD" not in screen and "COST" in screen  # This project: every row has its cwd; the cost is shown
    assert rows[1].startswith("  Deploy the API") and rows[2].startswith("  fix the parser please")

    pane.keys("parser", literal=True)
    screen = pane.wait_for(lambda s: "> parser" in s and "2 of 3" in s, "the filtered list")
    assert [title_of(line) for line in row_lines(screen)] == ["Parser rewrite", "fix the parser please"]

    pane.keys("Tab")
    screen = pane.wait_for(lambda s: "◉ All projects" in s and "3 of 4" in s, "all projects")
    assert "○ This project" in screen
    rows = row_lines(screen)
    assert [title_of(line) for line in rows] == ["Parser rewrite", "elsewhere parser work", "fix the parser please"]
    assert rows[1].rstrip().endswith("~/other")

    pane.keys("Down", "Down", "Up", "Enter")
    status, out, err = pane.finished()
    assert (status, err) == (0, "") and out.endswith("_dd44000000000004.jsonl\n")


def test_resume_draws_on_the_terminal_while_stdout_is_captured(run_in_tmux, tree: Tree) -> None:
    pane = run_in_tmux('chosen="$("$SESSDEX" resume)"; status=$?; printf %s "$chosen"; exit $status')
    pane.wait_for(lambda s: "Resume a session" in s and "Deploy the API" in s, "the picker")
    pane.keys("C-End", "Up", "Enter")
    status, out, _err = pane.finished()
    assert status == 0 and out.endswith("_bb22000000000002.jsonl") and "\n" not in out


def test_resume_escape_and_ctrl_c(run_in_tmux) -> None:
    cancelled = run_in_tmux('"$SESSDEX" resume')
    cancelled.wait_for(lambda s: "Resume a session" in s, "the picker")
    cancelled.keys("Escape")
    assert cancelled.finished() == (130, "", "No session selected\n")

    interrupted = run_in_tmux('"$SESSDEX" resume')
    interrupted.wait_for(lambda s: "Resume a session" in s, "the picker")
    interrupted.keys("C-c")
    assert interrupted.finished() == (130, "", "No session selected\n")  # nothing on stdout: `&&` stops


def test_empty_project_picker_and_resume(run_in_tmux, tree: Tree) -> None:
    tree.project("empty")  # first: the shell's `cd` must find it
    pane = run_in_tmux('cd "$HOME/empty" && "$SESSDEX" pick')
    screen = pane.wait_for(lambda s: "No sessions in this project" in s, "the empty-list message")
    assert "0 of 0" in screen
    pane.keys("Enter")
    time.sleep(0.3)
    assert "No sessions in this project" in pane.screen()  # Enter did nothing
    pane.keys("Escape")
    assert pane.finished() == (130, "", "No session selected\n")

    resume = run_in_tmux('cd "$HOME/empty" && "$SESSDEX" resume')
    assert resume.finished() == (1, "", "No sessions found\n")


def test_narrow_terminal_keeps_count_and_scope_and_wide_one_previews(run_in_tmux) -> None:
    narrow = run_in_tmux('"$SESSDEX" pick', width=60)
    screen = narrow.wait_for(lambda s: "Parser rewrite" in s, "the picker at 60 columns")
    header = screen.splitlines()[0]
    assert "◉" in header and "3 of 3" in header and len(header) <= 60
    narrow.keys("C-c")
    assert narrow.finished()[0] == 130

    wide = run_in_tmux('"$SESSDEX" pick', width=160)
    screen = wide.wait_for(lambda s: "last messages" in s, "the preview pane at 160 columns")
    assert "│" in screen and "xcsh: sure" in screen and "you: rewrite" in screen
    wide.keys("\x1f", literal=True)  # Ctrl+/
    screen = wide.wait_for(lambda s: "last messages" not in s, "the preview hidden by Ctrl+/")
    assert row_lines(screen)[0].rstrip().endswith("$0.00")  # the list takes the whole width again
    assert len(row_lines(screen)[0]) > 120
    wide.keys("\x1f", literal=True)
    screen = wide.wait_for(lambda s: "last messages" in s, "the preview shown again")
    # Nothing of the wide list is left in the pane (its cwd column was where the pane's blank cells are now).
    assert not any(line.rstrip().endswith("~/proj") for line in screen.splitlines()), screen
    wide.keys("Escape")
    assert wide.finished()[0] == 130


@pytest.mark.parametrize("command", ["pick", "resume"])
def test_on_a_current_catalog_the_first_frame_comes_first_and_the_picker_works_the_same(run_in_tmux, tree: Tree,
                                                                                         command: str) -> None:
    """With the catalog indexed, `pick` and `resume` draw the catalog's first frame first (cli/pick_commands.py)."""
    pane = run_in_tmux(f'"$SESSDEX" index >/dev/null 2>&1 && "$SESSDEX" {command}')
    heading = "Pick a session" if command == "pick" else "Resume a session"
    screen = pane.wait_for(lambda s: heading in s and "3 of 3" in s, "the picker")
    rows = row_lines(screen)
    assert rows[0].startswith("❯ Parser rewrite") and rows[0].rstrip().endswith("$0.00")
    pane.keys("deploy", literal=True)
    screen = pane.wait_for(lambda s: "> deploy" in s and "1 of 3" in s, "the filtered list")
    pane.keys("Tab")
    pane.wait_for(lambda s: "◉ All projects" in s and "1 of 4" in s, "all projects")
    pane.keys("Enter")
    status, out, err = pane.finished()
    assert (status, err) == (0, "") and out.endswith("_bb22000000000002.jsonl\n")
    assert "TITLE / FIRST MESSAGE" not in pane.screen()  # the shell's screen is back

    cancelled = run_in_tmux(f'"$SESSDEX" index >/dev/null 2>&1 && "$SESSDEX" {command}')
    cancelled.wait_for(lambda s: heading in s, "the picker")
    cancelled.keys("Escape")
    assert cancelled.finished() == (130, "", "No session selected\n")


def test_query_starts_the_picker_filtered_and_select_1_exit_0_behave_as_fzf(run_in_tmux, tree: Tree) -> None:
    pane = run_in_tmux('"$SESSDEX" pick -q "rewrite parser"')  # terms in any order
    screen = pane.wait_for(lambda s: "> rewrite parser" in s and "1 of 3" in s, "the picker started with the query")
    assert row_lines(screen)[0].startswith("❯ Parser rewrite")
    pane.keys("Enter")
    code, out, _err = pane.finished()
    assert code == 0 and out.strip().endswith("cc33000000000003.jsonl")
    # One match: printed at once, no picker drawn (and no terminal needed).
    single = run_in_tmux('"$SESSDEX" pick --query "deploy api" --select-1 </dev/null')
    code, out, _err = single.finished()
    assert code == 0 and out.strip().endswith("bb22000000000002.jsonl")
    none = run_in_tmux('"$SESSDEX" pick --query zzzqqq --exit-0 </dev/null')
    code, out, err = none.finished()
    assert (code, out) == (1, "") and "No session matches “zzzqqq”" in err
    # Several matches with --select-1: the picker opens on them.
    several = run_in_tmux('"$SESSDEX" pick -1 -q parser')
    several.wait_for(lambda s: "> parser" in s and "Parser rewrite" in s, "the picker over several matches")
    several.keys("Escape")
    assert several.finished()[0] == 130


def test_an_ambiguous_resume_prefix_opens_the_picker_on_its_candidates(run_in_tmux, tree: Tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "ab10000000000001", [user("first of two"), assistant("ok")], mtime_ms=BASE_MS + 1000)
    tree.session(proj, "ab20000000000002", [user("second of two"), assistant("ok")], mtime_ms=BASE_MS + 2000)
    pane = run_in_tmux('"$SESSDEX" resume ab')
    screen = pane.wait_for(lambda s: "Sessions matching “ab”" in s and "2 of 2" in s, "the picker on the candidates")
    rows = row_lines(screen)
    assert [title_of(line) for line in rows] == ["second of two", "first of two"]
    pane.keys("Down", "Enter")
    code, out, _err = pane.finished()
    assert code == 0 and out.strip().endswith("ab10000000000001.jsonl")
    cancelled = run_in_tmux('"$SESSDEX" resume ab')
    cancelled.wait_for(lambda s: "2 of 2" in s, "the picker on the candidates")
    cancelled.keys("Escape")
    code, out, err = cancelled.finished()
    assert (code, out) == (130, "") and "No session selected" in err
    piped = run_in_tmux('"$SESSDEX" resume ab </dev/null')  # no terminal: the candidates are listed, as before
    code, out, err = piped.finished()
    assert code == 1 and out == "" and "ambiguous" in err


def test_height_draws_the_picker_inline_below_the_prompt_and_erases_it_on_exit(run_in_tmux, tree: Tree) -> None:
    pane = run_in_tmux('printf "earlier output\\n$ sessdex pick --height 8\\n" >/dev/tty; "$SESSDEX" pick --height 8')
    screen = pane.wait_for(lambda s: "Pick a session" in s and "Parser rewrite" in s, "the inline picker")
    lines = screen.splitlines()
    assert lines[:2] == ["earlier output", "$ sessdex pick --height 8"]  # the shell's lines stay
    assert "Pick a session" in lines[2] and lines[3].startswith("> ") and "TITLE / FIRST MESSAGE" in lines[4]
    assert lines[5].startswith("❯ Parser rewrite") and lines[6].startswith("  Deploy the API")
    assert lines[7].startswith("  fix the parser please") and lines[8].endswith(".jsonl") and "Enter open" in lines[9]
    assert all(not line.strip() for line in lines[10:])  # nothing below the picker's 8 rows
    pane.keys("deploy", literal=True)
    screen = pane.wait_for(lambda s: "1 of 3" in s, "the filtered list")
    assert screen.splitlines()[5].startswith("❯ Deploy the API") and not screen.splitlines()[6].strip()
    pane.keys("Enter")
    status, out, _ = pane.finished()
    assert status == 0 and out.endswith("_bb22000000000002.jsonl\n")
    screen = pane.screen()
    assert screen.splitlines()[:2] == ["earlier output", "$ sessdex pick --height 8"]
    assert "Pick a session" not in screen and "Deploy the API" not in screen  # erased on the way out


def test_height_in_percent_at_the_bottom_of_the_terminal_scrolls_up_room(run_in_tmux, tree: Tree) -> None:
    pane = run_in_tmux('seq 1 29 >/dev/tty; "$SESSDEX" pick --height 40%')  # the cursor is on the last row
    screen = pane.wait_for(lambda s: "Pick a session" in s and "Parser rewrite" in s, "the inline picker")
    lines = screen.splitlines()
    assert len(lines) == 30 and "Pick a session" in lines[18] and "Enter open" in lines[29]  # 12 rows: 40% of 30
    assert lines[17] == "29" and lines[16] == "28"  # the shell's output scrolled up, not overwritten
    assert [title_of(line) for line in row_lines(screen)] == ["Parser rewrite", "Deploy the API",
                                                               "fix the parser please"]
    pane.keys("Escape")
    status, out, err = pane.finished()
    assert (status, out) == (130, "") and "No session selected" in err
    assert "Pick a session" not in pane.screen()


def test_a_bad_height_is_a_one_line_error(run_in_tmux, tree: Tree) -> None:
    pane = run_in_tmux('"$SESSDEX" pick --height 0; "$SESSDEX" pick --height 120%')
    status, out, err = pane.finished()
    assert status == 2 and out == "" and "Traceback" not in err
    assert err.count("--height") == 2 and len(err.strip().splitlines()) == 2
    assert "not a number of rows" in err and "picker_height" not in err  # words, not the parser's function name


def test_marks_keys_pin_star_tag_with_completion_and_note_in_a_real_terminal(run_in_tmux, tree: Tree) -> None:
    from sessdex.core.marks import append_events, current_marks, make_event

    append_events(tree.paths, [make_event("dd44000000000004", "desk", "tag", add=["backend"], remove=[])])
    pane = run_in_tmux('"$SESSDEX" pick')
    pane.wait_for(lambda s: "Pick a session" in s and "Parser rewrite" in s, "the picker")
    pane.keys("Down", "M-p")  # Alt+P on Deploy the API
    screen = pane.wait_for(lambda s: "Pinned bb22" in s, "the pin's notice")
    rows = row_lines(screen)
    assert rows[0].startswith("❯ ⚑ Deploy the API") and rows[1].startswith("  Parser rewrite")
    assert "○ Pinned" in screen  # the Pinned scope joined the Tab cycle
    pane.keys("M-s")
    pane.wait_for(lambda s: "Starred bb22" in s and "❯ ⚑★ Deploy the API" in s, "the star")
    pane.keys("M-t")
    pane.wait_for(lambda s: "\nTags:" in s and "Tab completes: backend" in s, "the tag prompt")
    pane.keys("ba", literal=True)
    pane.keys("Tab")
    pane.wait_for(lambda s: "Tags: backend" in s, "the completed tag")
    pane.keys("urgent", literal=True)
    pane.wait_for(lambda s: "Tags: backend urgent" in s, "the tag typed after the completed one")
    pane.keys("Enter")
    screen = pane.wait_for(lambda s: "Tagged bb22" in s and "#backend #urgent" in s, "the tags on the detail line")
    pane.keys("M-n")
    pane.wait_for(lambda s: "\nNote:" in s, "the note prompt")
    pane.keys("check the deploy", literal=True)
    pane.keys("Enter")
    pane.wait_for(lambda s: "note: check the deploy" in s, "the note on the detail line")
    pane.keys("tag:urgent is:starred", literal=True)
    screen = pane.wait_for(lambda s: "1 of 3" in s, "the marks terms")
    assert [title_of(line) for line in row_lines(screen)] == ["⚑★ Deploy the API"]
    pane.keys("Enter")
    status, out, _ = pane.finished()
    assert status == 0 and out.endswith("_bb22000000000002.jsonl\n")
    marks = current_marks(tree.paths)["bb22000000000002"]
    assert (marks.pinned, marks.starred, marks.tags, marks.note) == (True, True, ("backend", "urgent"),
                                                                     "check the deploy")


def test_alt_enter_on_an_ambiguous_prefix_forks_the_choice_with_its_marks(run_in_tmux, tree: Tree) -> None:
    """A fork made of the picker's choice starts unmarked after Enter, and keeps the session's pins, stars, tags and
    note after Alt+Enter (as `resume --keep-marks`)."""
    from sessdex.core.marks import append_events, current_marks, make_event

    # Two sessions of another project match `ab`, none of this one: the chosen one is forked here.
    tree.session(tree.project("other"), "ab10000000000001", [user("unmarked elsewhere"), assistant("ok")],
                 mtime_ms=BASE_MS + 1000)
    tree.session(tree.project("other"), "ab30000000000003", [user("marked elsewhere"), assistant("ok")],
                 mtime_ms=BASE_MS + 3000)
    append_events(tree.paths, [make_event("ab30000000000003", "desk", "pin"),
                               make_event("ab30000000000003", "desk", "tag", add=["keep"], remove=[]),
                               make_event("ab30000000000003", "desk", "note", text="carry me")])
    for keys, kept in ((("Enter",), False), (("M-Enter",), True)):
        pane = run_in_tmux('"$SESSDEX" resume --yes ab')
        screen = pane.wait_for(lambda s: "Sessions matching “ab”" in s and "2 of 2" in s, "the picker on the candidates")
        assert "Alt+Enter open, a fork keeps marks" in screen
        assert title_of(row_lines(screen)[0]).endswith("marked elsewhere")  # the newest, of the other project
        pane.keys(*keys)
        code, out, err = pane.finished()
        assert code == 0 and "Forked ab30000000000003" in err, err
        fork_path = Path(out.strip())
        assert fork_path.parent.name == tree.paths.project_session_dir(tree.home / "proj").name
        fork_id = fork_path.stem.rsplit("_", 1)[-1]
        marks = current_marks(tree.paths).get(fork_id)
        if kept:
            assert marks is not None and (marks.pinned, marks.tags, marks.note) == (True, ("keep",), "carry me")
        else:
            assert marks is None or marks.empty
