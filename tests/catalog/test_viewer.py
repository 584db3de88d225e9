"""`sessdex view`: transcript rendering, and the in-place switch driven headless (pipe input, DummyOutput)."""

from __future__ import annotations

import asyncio
import io
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from prompt_toolkit.application import Application
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput, Output
from prompt_toolkit.output.vt100 import Vt100_Output

from sessdex.catalog.cli.entry import main
from sessdex.catalog.queries.file_scan import FileScan
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.tui.viewer import (
    RESUMED_NOTICE,
    PickerChooser,
    SessionChooser,
    TranscriptViewer,
    open_viewer_session,
    plain_text,
    title_text,
    transcript_lines,
)
from sessdex.core import breadcrumbs
from sessdex.core.agent_session import AgentSession, HookBus
from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager

BASE_MS = 1_740_823_200_000
UP, ENTER, ESCAPE, CTRL_C = "\x1b[A", "\r", "\x1b", "\x03"
RENDER_TIMEOUT_S = 10


class Screens:
    """Every screen the viewer and the pickers it opens draw, and an event set after each drawing."""

    def __init__(self) -> None:
        self.drawn: list[str] = []
        self.rendered = asyncio.Event()

    def watch(self, app: Application[Any], picker: Any = None) -> None:
        app.after_render += lambda drawn_app: self._snapshot(drawn_app, picker)

    def _snapshot(self, app: Application[Any], picker: Any) -> None:
        screen = app.renderer.last_rendered_screen
        if screen is not None:  # the final "done" drawing of a full-screen app keeps no screen
            size = app.output.get_size()
            rows = ["".join(screen.data_buffer[row][column].char for column in range(size.columns))
                    for row in range(size.rows)]
            if picker is not None:  # the picker draws its list, header and help lines itself, over prompt_toolkit's
                for row, column, width, fragments in picker.painted_lines():
                    if row < size.rows:
                        text = "".join(text for _style, text in fragments)[:width].ljust(width)
                        rows[row] = rows[row][:column] + text + rows[row][column + width:]
            self.drawn.append("\n".join(row.rstrip() for row in rows))
        self.rendered.set()


class Sandbox:
    """An agent dir with a project, a deterministic runtime, and the viewers opened on it (closed at the end)."""

    def __init__(self, root: Path) -> None:
        for name in ("home", "tmp"):
            (root / name).mkdir(parents=True, exist_ok=True)
        self.project = root / "home" / "proj"
        self.project.mkdir()
        self.paths = AgentPaths(agent_dir=root / "home" / ".xcsh" / "agent", home=root / "home",
                                tmp_dir=root / "tmp")
        self.runtime = SessionRuntime(paths=self.paths, environ={}, tty_path=lambda: None)
        self.sessions: list[AgentSession] = []

    def session(self, question: str, model: str, thinking: str, *, mode: str | None = None,
                mtime_ms: int = BASE_MS, directory: Path | None = None) -> Path:
        manager = SessionManager.create(str(self.project), directory, runtime=self.runtime)
        manager.append_model_change(model)
        manager.append_thinking_level_change(thinking)
        if mode is not None:
            manager.append_mode_change(mode, {"planFile": "plan.md"})
        manager.append_message({"role": "user", "content": question, "timestamp": BASE_MS})
        provider, model_id = model.split("/")
        manager.append_message({"role": "assistant", "content": [{"type": "text", "text": f"answer to {question}"}],
                                "provider": provider, "model": model_id, "timestamp": BASE_MS})
        manager.close()
        path = manager.get_session_file()
        assert path is not None
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        return path

    def viewer(self, path: Path, screens: Screens, *, hooks: HookBus | None = None,
               choose_session: SessionChooser | None = None) -> TranscriptViewer:
        """A viewer on `path` whose chooser is the real picker over a file scan, its screens recorded."""
        session, agent = open_viewer_session(
            lambda agent, models: AgentSession.open(path, agent, models, runtime=self.runtime, hooks=hooks))
        self.sessions.append(session)
        chooser = choose_session or PickerChooser(
            open_source=lambda viewer: PickerSource(FileScan(self.paths), viewer.session.session_manager.get_cwd()),
            on_open=lambda picker: screens.watch(picker.app, picker))
        return TranscriptViewer(session, agent, paths=self.paths, choose_session=chooser)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path)
    yield box
    for session in box.sessions:
        session.close()


def drive(viewer: TranscriptViewer, screens: Screens, keys: list[str], output: Output | None = None) -> list[str]:
    """Run the viewer, sending `keys` one at a time, each once the previous one's screen was drawn.

    Returns every screen drawn (the viewer's and its pickers'). The viewer must have quit after the last key.
    """
    return asyncio.run(_drive(viewer, screens, keys, output or DummyOutput()))


async def _drive(viewer: TranscriptViewer, screens: Screens, keys: list[str], output: Output) -> list[str]:
    with create_pipe_input() as pipe:
        app = viewer.build_application(input=pipe, output=output)
        screens.watch(app)
        running = asyncio.ensure_future(app.run_async())
        for key in keys:
            await asyncio.wait_for(screens.rendered.wait(), RENDER_TIMEOUT_S)
            screens.rendered.clear()
            pipe.send_text(key)
        await asyncio.wait_for(running, RENDER_TIMEOUT_S)
    return screens.drawn


def transcript_area(screen: str) -> str:
    """A screen without its title line."""
    return screen.split("\n", 1)[1]


# -- rendering ---------------------------------------------------------------------------------------

def test_transcript_renders_every_context_message_kind() -> None:
    messages = [
        {"role": "compactionSummary", "summary": "Earlier we set up the repo.", "tokensBefore": 5120},
        {"role": "user", "content": [{"type": "text", "text": "run\tthe tests"}, {"type": "image",
                                                                               "mimeType": "image/png"}]},
        {"role": "assistant", "provider": "anthropic", "model": "claude-x",
         "content": [{"type": "thinking", "thinking": "tests first"}, {"type": "text", "text": "Running them."},
                     {"type": "toolCall", "name": "bash", "arguments": {"command": "pytest"}}]},
        {"role": "toolResult", "toolName": "bash", "isError": True,
         "content": [{"type": "text", "text": "\n".join(f"out {n}" for n in range(15))}]},
        {"role": "custom", "customType": "todo", "content": "1. fix it", "display": False},
        {"role": "branchSummary", "summary": "Tried another approach.", "fromId": "root"},
        {"role": "bashExecution", "command": "ls"},
    ]
    assert plain_text(transcript_lines(messages)).split("\n") == [
        "≡ Compacted (5120 tokens before)", "Earlier we set up the repo.", "",
        "▶ You", "run the tests", "[image image/png]", "",
        "◆ Assistant (anthropic/claude-x)", "│ tests first", "Running them.", '→ bash {"command":"pytest"}', "",
        "← bash (error)", *[f"out {n}" for n in range(12)], "… 3 more lines", "",
        "● todo (hidden)", "1. fix it", "",
        "⎇ Branch summary", "Tried another approach.", "",
        "[bashExecution]",
    ]
    styles = {line[0][0] for line in transcript_lines(messages) if line}
    assert {"class:user", "class:assistant", "class:tool", "class:custom", "class:summary",
            "class:thinking"} <= styles


def test_an_empty_session_says_so() -> None:
    assert plain_text(transcript_lines([])) == "(no messages yet)"


# -- the switch path, headless -------------------------------------------------------------------------

@pytest.fixture
def two_sessions(sandbox: Sandbox) -> tuple[Path, Path]:
    alpha = sandbox.session("alpha question", "anthropic/claude-x", "high", mode="plan", mtime_ms=BASE_MS)
    beta = sandbox.session("beta question", "openai/gpt-y", "low", mtime_ms=BASE_MS + 60_000)
    return alpha, beta


def test_switching_in_place_rebuilds_the_view_from_the_new_context(sandbox: Sandbox,
                                                                  two_sessions: tuple[Path, Path]) -> None:
    alpha, beta = two_sessions
    screens = Screens()
    viewer = sandbox.viewer(alpha, screens)
    first, picker, *_, final = drive(viewer, screens, ["r", ENTER, "q"])  # the picker lists beta first

    assert "alpha question" in first and "anthropic/claude-x · thinking high · mode plan" in first
    assert "Switch session" in picker and "beta question" in picker and "alpha question" in picker
    assert RESUMED_NOTICE in final and "Switch session" not in final
    assert "beta question" in final and "answer to beta question" in final and "alpha question" not in final
    assert "openai/gpt-y · thinking low · mode none · 2 messages" in final
    assert viewer.session.session_file == beta
    assert "alpha" not in viewer.transcript and viewer.agent.session_id == viewer.session.session_id
    assert viewer.exit_requested


def test_the_picker_filters_as_you_type_before_the_switch(sandbox: Sandbox,
                                                          two_sessions: tuple[Path, Path]) -> None:
    alpha, _ = two_sessions
    alpha_again = sandbox.session("alpha follow-up", "anthropic/claude-x", "minimal", mtime_ms=BASE_MS + 120_000)
    screens = Screens()
    viewer = sandbox.viewer(alpha, screens)
    drawn = drive(viewer, screens, ["r", "f", "o", "l", "l", ENTER, "q"])
    assert viewer.session.session_file == alpha_again
    assert RESUMED_NOTICE in drawn[-1] and "thinking minimal · mode none" in drawn[-1]


def test_cancelling_the_picker_changes_nothing(sandbox: Sandbox, two_sessions: tuple[Path, Path]) -> None:
    alpha, _ = two_sessions
    screens = Screens()
    viewer = sandbox.viewer(alpha, screens)
    before = viewer.transcript
    drawn = drive(viewer, screens, ["r", UP, ESCAPE, "q"])
    assert any("Switch session" in screen for screen in drawn)
    assert viewer.session.session_file == alpha and viewer.transcript == before
    assert "Switch session" not in drawn[-1] and RESUMED_NOTICE not in drawn[-1]
    assert "alpha question" in drawn[-1]


def test_an_empty_picker_ignores_enter_and_esc_returns(sandbox: Sandbox, tmp_path: Path) -> None:
    elsewhere = sandbox.session("lonely", "anthropic/claude-x", "off", directory=tmp_path / "outside")
    screens = Screens()
    viewer = sandbox.viewer(elsewhere, screens)  # its project's folders hold no session
    drawn = drive(viewer, screens, ["r", ENTER, ESCAPE, "q"])
    assert ["Switch session" in screen for screen in drawn] == [False, True, True, False]
    assert viewer.session.session_file == elsewhere and viewer.exit_requested


def test_the_viewer_takes_the_alternate_screen_back_after_the_picker(sandbox: Sandbox,
                                                                     two_sessions: tuple[Path, Path]) -> None:
    alpha, _ = two_sessions
    terminal = io.StringIO()
    output = Vt100_Output(terminal, lambda: Size(rows=24, columns=100), term="xterm")
    screens = Screens()
    drive(sandbox.viewer(alpha, screens), screens, ["r", ENTER, "q"], output)
    written = terminal.getvalue()
    toggles = re.findall(r"\x1b\[\?1049([hl])", written)
    assert toggles and toggles == ["h", "l"] * (len(toggles) // 2)  # never left twice, never drawn outside
    resumed_at = written.rindex(RESUMED_NOTICE)
    assert written.rindex("\x1b[?1049h") < resumed_at < written.rindex("\x1b[?1049l")


def test_ctrl_c_in_the_picker_quits_the_viewer(sandbox: Sandbox, two_sessions: tuple[Path, Path]) -> None:
    alpha, _ = two_sessions
    screens = Screens()
    viewer = sandbox.viewer(alpha, screens)
    drive(viewer, screens, ["r", UP, CTRL_C])
    assert viewer.exit_requested and viewer.session.session_file == alpha


def test_the_chooser_is_one_function_and_a_failed_switch_is_reported(sandbox: Sandbox,
                                                                    two_sessions: tuple[Path, Path]) -> None:
    alpha, beta = two_sessions
    broken = alpha.parent / "a-directory.jsonl"
    broken.mkdir()
    answers = iter([broken, beta])
    chooser_calls: list[TranscriptViewer] = []

    def choose(viewer: TranscriptViewer, done: Callable[[Path | None], None]) -> None:
        chooser_calls.append(viewer)
        done(next(answers))

    screens = Screens()
    viewer = sandbox.viewer(alpha, screens, choose_session=choose)
    drawn = drive(viewer, screens, ["r", "r", "q"])
    assert "Could not switch" in drawn[1] and "alpha question" in drawn[1]  # the viewer keeps running
    assert RESUMED_NOTICE in drawn[2] and "beta question" in drawn[2]
    assert viewer.session.session_file == beta and chooser_calls == [viewer, viewer]


def test_a_broken_picker_is_reported_in_the_viewer(sandbox: Sandbox, two_sessions: tuple[Path, Path]) -> None:
    alpha, _ = two_sessions

    def no_source(viewer: TranscriptViewer) -> Any:
        raise RuntimeError("catalog exploded")

    screens = Screens()
    viewer = sandbox.viewer(alpha, screens, choose_session=PickerChooser(open_source=no_source))
    drawn = drive(viewer, screens, ["r", "q"])
    assert "The session picker failed: catalog exploded" in drawn[1]
    assert viewer.session.session_file == alpha


def test_a_hook_cancelling_the_switch_is_shown(sandbox: Sandbox, two_sessions: tuple[Path, Path]) -> None:
    alpha, _ = two_sessions
    hooks = HookBus()
    hooks.on("session_before_switch", lambda event: event.cancel())
    screens = Screens()
    viewer = sandbox.viewer(alpha, screens, hooks=hooks)
    drawn = drive(viewer, screens, ["r", ENTER, "q"])
    assert "Switch cancelled" in drawn[-1] and viewer.session.session_file == alpha


def test_the_view_starts_at_the_end_and_g_goes_to_the_top(sandbox: Sandbox) -> None:
    path = sandbox.session("first question", "anthropic/claude-x", "off")
    manager = SessionManager.open(path, runtime=sandbox.runtime)
    for number in range(60):
        manager.append_message({"role": "user", "content": f"follow-up {number}", "timestamp": BASE_MS})
    manager.close()
    screens = Screens()
    first, top = (transcript_area(screen) for screen in drive(sandbox.viewer(path, screens), screens, ["g", "q"]))
    assert "follow-up 59" in first and "first question" not in first
    assert "first question" in top and "follow-up 59" not in top


@pytest.mark.parametrize(("key", "cancelled"), [("q", False), (ESCAPE, True), ("\x03", True)])
def test_esc_and_ctrl_c_leave_the_viewer_as_a_cancel(sandbox: Sandbox, key: str, cancelled: bool) -> None:
    path = sandbox.session("first question", "anthropic/claude-x", "off")
    screens = Screens()
    viewer = sandbox.viewer(path, screens)
    drive(viewer, screens, [key])
    assert viewer.exit_requested and viewer.cancelled == cancelled  # the CLI exits 130 when cancelled


# -- the command -------------------------------------------------------------------------------------

@pytest.fixture
def sessdex(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("HOME", str(sandbox.paths.home))
    for name in ("KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION", "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(breadcrumbs, "current_tty_path", lambda: None)
    monkeypatch.chdir(sandbox.project)

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exit_info:
            main(["--agent-dir", str(sandbox.paths.agent_dir), "view", *args])
        out, err = capsys.readouterr()
        return int(exit_info.value.code or 0), out, err
    return run


def test_view_prints_a_session_named_by_path_or_id_prefix(sessdex, two_sessions: tuple[Path, Path]) -> None:
    alpha, _ = two_sessions
    alpha_id = orjson.loads(alpha.read_bytes().splitlines()[0])["id"]
    code, out, _ = sessdex(str(alpha), "--print")
    assert code == 0 and "▶ You\nalpha question" in out
    assert out.rstrip().endswith("anthropic/claude-x · thinking high · mode plan · 2 messages")
    code, out, _ = sessdex(alpha_id[:12], "--print")
    assert code == 0 and "alpha question" in out
    code, out, _ = sessdex("--print")  # no SESSION: what --continue resumes (the newest here)
    assert code == 0 and "beta question" in out


def test_view_refuses_a_missing_or_invalid_file_without_touching_it(sessdex, tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    code, _, err = sessdex(str(missing), "--print")
    assert code == 2 and "no such session file" in err and not missing.exists()
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n")
    code, _, err = sessdex(str(garbage), "--print")
    assert code == 2 and "not a session file" in err and garbage.read_text() == "not json\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("garbage")] == ["garbage.jsonl"]


def test_view_reports_unknown_ids_and_empty_projects(sessdex, sandbox: Sandbox) -> None:
    sandbox.paths.agent_dir.mkdir(parents=True, exist_ok=True)
    code, _, err = sessdex("--print")
    assert code == 1 and "No sessions found" in err
    code, _, err = sessdex("deadbeef", "--print")
    assert code == 1 and 'Session "deadbeef" not found.' in err


def test_view_shows_the_sessions_cost_and_tokens_per_model_under_its_title(sessdex, sandbox: Sandbox) -> None:
    manager = SessionManager.create(str(sandbox.project), None, runtime=sandbox.runtime)
    manager.append_message({"role": "user", "content": "price this", "timestamp": BASE_MS})
    for provider, model, cost, tokens in (("openai", "gpt-y", 0.5, 1000), ("anthropic", "claude-x", 2.25, 300_000),
                                          ("openai", "gpt-y", 0.25, 500)):
        manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": provider,
                                "model": model, "timestamp": BASE_MS,
                                "usage": {"input": tokens, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                          "cost": {"total": cost}}})
    manager.close()
    code, out, _ = sessdex(str(manager.get_session_file()), "--print")
    assert code == 0
    assert out.splitlines()[1] == "$3.00 · 301.5k tokens  —  anthropic/claude-x $2.25 (300.0k) · openai/gpt-y $0.75 (1.5k)"


def test_the_viewer_is_a_pager_slash_searches_n_and_N_repeat_and_question_mark_shows_the_keys(
        sandbox: Sandbox) -> None:
    path = sandbox.session("first question", "anthropic/claude-x", "off")
    manager = SessionManager.open(path, runtime=sandbox.runtime)
    for number in range(80):
        manager.append_message({"role": "user", "content": f"follow-up {number} quartz" if number in (20, 60)
                                else f"follow-up {number}", "timestamp": BASE_MS})
    manager.close()
    screens = Screens()
    viewer = sandbox.viewer(path, screens)
    drawn = drive(viewer, screens, ["g", "/", "QUARTZ q", ESCAPE, "/", "quartz", ENTER, "n", "N", "?", "x", "q"])
    assert not viewer.cancelled  # Esc gave up the search (with the q typed in it), it did not leave the viewer
    assert any("/QUARTZ q" in screen and "first question" in screen for screen in drawn)
    found_first = next(screen for screen in drawn if "follow-up 20 quartz" in screen)
    assert "follow-up 60 quartz" not in found_first
    after_n = drawn[drawn.index(found_first) + 1:]
    assert any("follow-up 60 quartz" in screen and "follow-up 20 quartz" not in screen for screen in after_n)
    assert any("Keys" in screen and "next / previous match" in screen for screen in drawn)
    assert "next / previous match" not in drawn[-1]


# -- the whole transcript ------------------------------------------------------------------------------

def compacted_and_branched(sandbox: Sandbox) -> Path:
    """A session whose first question a compaction took out of the context, with an abandoned branch."""
    manager = SessionManager.create(str(sandbox.project), None, runtime=sandbox.runtime)
    manager.append_model_change("anthropic/claude-x")

    def turn(question: str) -> str:
        manager.append_message({"role": "user", "content": question, "timestamp": BASE_MS})
        return manager.append_message({"role": "assistant", "content": [{"type": "text", "text": f"re {question}"}],
                                       "provider": "anthropic", "model": "claude-x", "timestamp": BASE_MS})

    turn("the very first question")
    fork_point = turn("second question")
    turn("abandoned branch question")
    manager.branch(fork_point)
    kept = manager.append_message({"role": "user", "content": "kept question", "timestamp": BASE_MS})
    manager.append_compaction("We set up the repo.", None, kept, 5120)
    turn("after the compaction")
    manager.close()
    path = manager.get_session_file()
    assert path is not None
    return path


def test_the_viewer_shows_the_whole_transcript_and_m_switches_to_what_the_model_sees(sandbox: Sandbox) -> None:
    path = compacted_and_branched(sandbox)
    screens = Screens()
    viewer = sandbox.viewer(path, screens)
    whole = viewer.transcript
    order = ["the very first question", "second question", "abandoned branch question", "⎇ Another branch, from entry",
             "kept question", "≡ Compaction, 5120 tokens before", "We set up the repo.", "after the compaction"]
    assert [whole.index(text) for text in order] == sorted(whole.index(text) for text in order)
    assert "· model: anthropic/claude-x" in whole
    drawn = drive(viewer, screens, ["m", "m", "m", "q"])
    assert "whole transcript" in drawn[0] and "What the model sees" in drawn[-1]
    context = viewer.transcript
    assert "the very first question" not in context and "abandoned branch" not in context
    assert context.index("≡ Compacted (5120 tokens before)") < context.index("kept question") < \
        context.index("after the compaction")


def test_the_viewers_title_for_a_compacted_session_is_lists_name(sandbox: Sandbox, sessdex,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = compacted_and_branched(sandbox)
    viewer = sandbox.viewer(path, Screens())
    with pytest.raises(SystemExit):
        main(["--agent-dir", str(sandbox.paths.agent_dir), "list", "--json", "name,id"])
    [listed] = orjson.loads(capsys.readouterr().out)
    assert listed["name"] == "the very first question"  # the file's first message, which the context lost
    assert title_text(viewer.session, viewer.agent) == f" {listed['name']} · {listed['id']}"
    code, out, _ = sessdex(str(path), "--print")  # printed as the viewer starts: the whole transcript
    assert code == 0 and out.startswith(f"{listed['name']} · {listed['id']}\n")
    assert "abandoned branch question" in out and "≡ Compaction, 5120 tokens before" in out
