"""`sessdex view`: a terminal transcript viewer that switches sessions in place through AgentSession.

The viewer is a small agent front end that never generates. A `TranscriptAgent` holds what
`AgentSession` restores (messages, model, thinking level); the view is drawn from that state. The
`r` key opens a session chooser; choosing a session runs `AgentSession.switch_session` and rebuilds
the view from the new context, then shows `Resumed session`, as the agent's interactive mode does.
Cancelling the chooser returns to the transcript unchanged.

The chooser is one function, `choose_session(viewer, done)`: it shows a way to pick a session and
calls `done(path)` with the chosen file, or `done(None)` on cancel. The default, `PickerChooser`,
suspends the viewer and runs the session picker (catalog/picker.py) over the viewed session's
project on the same terminal; Ctrl+C there quits the viewer, as the agent's in-session picker does.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from prompt_toolkit.application import Application, in_terminal
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition, is_searching
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import ConditionalKeyBindings, KeyBindings, KeyPressEvent, merge_key_bindings
from prompt_toolkit.key_binding.bindings.scroll import (
    scroll_one_line_down,
    scroll_one_line_up,
    scroll_page_down,
    scroll_page_up,
)
from prompt_toolkit.key_binding.bindings.search import abort_search, accept_search
from prompt_toolkit.layout import ConditionalContainer, Float, FloatContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.lexers import Lexer
from prompt_toolkit.output import Output
from prompt_toolkit.search import SearchDirection, start_search
from prompt_toolkit.styles import Style
from prompt_toolkit.widgets import Frame, SearchToolbar

from sessdex.catalog.queries.naming import display_name
from sessdex.catalog.tui.figures import format_cost, format_tokens
from sessdex.catalog.tui.terminal_text import terminal_text
from sessdex.core.agent_session import AgentSession, Model, ModelSpec
from sessdex.core.context import branch_summary_message, compaction_summary_message, custom_message_from_entry
from sessdex.core.discovery import sanitize_display_name
from sessdex.core.errors import SessdexError
from sessdex.core.paths import AgentPaths
from sessdex.core.usage import dollars, usage_facts

if TYPE_CHECKING:
    from sessdex.catalog.export.transcript import Transcript
    from sessdex.catalog.queries.picker_source import PickerSource
    from sessdex.catalog.store.settings import Settings
    from sessdex.catalog.tui.picker import PickerResult, SessionPicker

TOOL_RESULT_MAX_LINES = 12
TOOL_ARGUMENTS_MAX_CHARS = 160
RESUMED_NOTICE = "Resumed session"
HELP_TEXT = """\
 ↑↓ j k        one line          /TEXT Enter   search forward
 PgUp PgDn     one page          n  N          next / previous match
 space b       one page          ?             this help (any key closes it)
 g Home        the top           r Ctrl+R      switch session
 G End         the end           q Ctrl+D      quit
 m             whole transcript / what the model sees
                                 Esc Ctrl+C    cancel (exit 130)
"""

STYLE = Style.from_dict({
    "title": "reverse bold",
    "status": "reverse",
    "notice": "ansigreen bold",
    "error": "ansired bold",
    "user": "ansicyan bold",
    "assistant": "ansigreen bold",
    "custom": "ansimagenta bold",
    "summary": "ansiyellow bold",
    "tool": "ansiblue",
    "thinking": "italic ansibrightblack",
    "dim": "ansibrightblack",
})

Line = list[tuple[str, str]]


# -- the agent the viewer drives ------------------------------------------------------------------

class TranscriptAgent:
    """An agent that never generates: it holds the state AgentSession restores, for display.

    It never emits events and has no queues, so aborting and clearing them have nothing to do.
    """

    def __init__(self) -> None:
        self.model: Model | None = None
        self.messages: list[dict[str, Any]] = []
        self.session_id: str | None = None
        self.thinking_level = "off"
        self._listeners: list[Callable[[dict[str, Any]], None]] = []

    def subscribe(self, listener: Callable[[dict[str, Any]], None]) -> None:
        """Remember `listener` (no events are ever sent)."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[dict[str, Any]], None]) -> None:
        """Forget `listener`."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def abort(self) -> None:
        """Nothing runs, so nothing to stop."""

    def clear_steering_queue(self) -> None:
        """No queued steering messages."""

    def clear_follow_up_queue(self) -> None:
        """No queued follow-up messages."""

    def clear_next_turn_messages(self) -> None:
        """No next-turn messages."""

    def replace_messages(self, messages: list[dict[str, Any]]) -> None:
        """Hold `messages` as the transcript."""
        self.messages = list(messages)

    def set_session_id(self, session_id: str) -> None:
        """Hold the session id."""
        self.session_id = session_id

    def set_model(self, model: Model) -> None:
        """Hold the model shown in the status line."""
        self.model = model

    def set_thinking_level(self, level: str) -> None:
        """Hold the thinking level shown in the status line."""
        self.thinking_level = level


class AnyModelRegistry:
    """The viewer knows no model catalog: every `provider/model` a session names counts as available."""

    def find(self, provider: str, model_id: str) -> Model | None:
        """A reasoning-capable model of that name (no level cap is known)."""
        return ModelSpec(provider, model_id)


# -- rendering a context ----------------------------------------------------------------------------

def _text_lines(style: str, text: str, prefix: str = "") -> list[Line]:
    return [[(style, prefix + line)] for line in text.expandtabs(4).replace("\r", "").split("\n")]


def _compact_json(value: Any, limit: int) -> str:
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _content_lines(content: Any) -> list[Line]:
    """Text, thinking, tool-call and image blocks of a message's content, one display line per text line."""
    if isinstance(content, str):
        return _text_lines("", content)
    lines: list[Line] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            lines += _text_lines("", str(block.get("text", "")))
        elif kind == "thinking":
            lines += _text_lines("class:thinking", str(block.get("thinking", "")), prefix="│ ")
        elif kind == "toolCall":
            arguments = _compact_json(block.get("arguments"), TOOL_ARGUMENTS_MAX_CHARS)
            lines.append([("class:tool", f"→ {block.get('name')} {arguments}")])
        elif kind == "image":
            lines.append([("class:dim", f"[image {block.get('mimeType', '')}]".replace(" ]", "]"))])
        else:
            lines.append([("class:dim", f"[{kind}]")])
    return lines


def _limited(lines: list[Line], limit: int) -> list[Line]:
    if len(lines) <= limit:
        return lines
    return lines[:limit] + [[("class:dim", f"… {len(lines) - limit} more lines")]]


def message_lines(message: dict[str, Any]) -> list[Line]:
    """One context message as display lines: a styled heading, then its content."""
    role = message.get("role")
    if role == "user":
        return [[("class:user", "▶ You")], *_content_lines(message.get("content"))]
    if role == "assistant":
        source = "/".join(str(message[key]) for key in ("provider", "model") if message.get(key))
        heading = "◆ Assistant" + (f" ({source})" if source else "")
        body = _content_lines(message.get("content"))
        if message.get("stopReason") in ("error", "aborted"):
            body.append([("class:error", f"[{message['stopReason']}] {message.get('errorMessage') or ''}".rstrip())])
        return [[("class:assistant", heading)], *body]
    if role == "toolResult":
        heading = f"← {message.get('toolName', 'tool')}" + (" (error)" if message.get("isError") else "")
        return [[("class:tool", heading)], *_limited(_content_lines(message.get("content")), TOOL_RESULT_MAX_LINES)]
    if role == "custom":
        hidden = "" if message.get("display", True) else " (hidden)"
        return [[("class:custom", f"● {message.get('customType') or 'custom'}{hidden}")],
                *_content_lines(message.get("content"))]
    if role == "branchSummary":
        return [[("class:summary", "⎇ Branch summary")], *_text_lines("", str(message.get("summary") or ""))]
    if role == "compactionSummary":
        tokens = message.get("tokensBefore")
        heading = "≡ Compacted" + (f" ({tokens} tokens before)" if isinstance(tokens, int) else "")
        return [[("class:summary", heading)], *_text_lines("", str(message.get("summary") or ""))]
    return [[("class:dim", f"[{role}]")], *_content_lines(message.get("content"))]


def transcript_lines(messages: list[dict[str, Any]]) -> list[Line]:
    """The whole transcript: every message's lines, a blank line between messages."""
    if not messages:
        return [[("class:dim", "(no messages yet)")]]
    lines: list[Line] = []
    for index, message in enumerate(messages):
        if index:
            lines.append([])
        lines += message_lines(message) if isinstance(message, dict) else [[("class:dim", repr(message))]]
    return _terminal_safe(lines)


def _terminal_safe(lines: list[Line]) -> list[Line]:
    """The one place the transcript's text is made terminal-safe (each fragment is one line already)."""
    return [[(style, terminal_text(text)) for style, text in line] for line in lines]


def whole_transcript_lines(transcript: Transcript) -> list[Line]:
    """Every entry of the session file (every branch, in file order), not only what the model sees: messages as
    in `transcript_lines`, a marker where a branch leaves the entry above it, and each compaction as a marker (the
    messages above it stay; the model sees its summary instead of them)."""
    lines: list[Line] = []
    previous_id: Any = None
    for entry in transcript.entries:
        block = _entry_lines(entry) if entry else []
        if not block:
            continue
        parent = entry.get("parentId")
        if lines:
            lines.append([])
            if parent != previous_id and previous_id is not None:
                where = f"entry {str(parent)[:8]}" if parent else "the start"
                lines += [[("class:summary", f"⎇ Another branch, from {where}")], []]
        lines += block
        previous_id = entry.get("id")
    if not lines:
        return [[("class:dim", "(no messages yet)")]]
    return _terminal_safe(lines)


def _entry_lines(entry: dict[str, Any]) -> list[Line]:
    """One file entry as display lines ([] for the bookkeeping ones: labels, session info)."""
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        return message_lines(entry["message"])
    if kind == "custom_message":
        return message_lines(custom_message_from_entry(entry))
    if kind == "branch_summary" and entry.get("summary"):
        return message_lines(branch_summary_message(entry))
    if kind == "compaction":
        tokens = compaction_summary_message(entry).get("tokensBefore")
        before = f", {tokens} tokens before" if isinstance(tokens, int) else ""
        return [[("class:summary", f"≡ Compaction{before}: from here the model sees this summary instead of the "
                                   "messages above")], *_text_lines("class:dim", str(entry.get("summary") or ""))]
    if kind == "model_change":
        model = entry.get("model") or "/".join(str(entry[key]) for key in ("provider", "modelId") if entry.get(key))
        return [[("class:dim", f"· model: {model}")]]
    if kind == "thinking_level_change":
        return [[("class:dim", f"· thinking level: {entry.get('thinkingLevel')}")]]
    return []


def plain_text(lines: list[Line]) -> str:
    """Display lines without their styles."""
    return "\n".join("".join(text for _, text in line) for line in lines)


def model_name(model: Model | None) -> str:
    """`provider/id` of a model, or "no model"."""
    return f"{model.provider}/{model.id}" if model is not None else "no model"


def status_text(session: AgentSession, agent: TranscriptAgent) -> str:
    """The status line: model, thinking level, mode and message count."""
    return (f" {model_name(agent.model)} · thinking {agent.thinking_level} · mode {session.mode} · "
            f"{len(agent.messages)} messages")


def usage_text(session: AgentSession) -> str:
    """The session's spending: total cost and tokens of every assistant message in its file, then per model."""
    per_model: dict[str, list[float]] = {}
    for fact in usage_facts(session.session_manager.get_entries()):
        figures = per_model.setdefault(f"{fact.provider}/{fact.model}", [0, 0.0])
        figures[0] += fact.cost_nanos
        figures[1] += fact.input_tokens + fact.output_tokens + fact.cache_read_tokens + fact.cache_write_tokens
    if not per_model:
        return " no usage recorded"
    cost, tokens = dollars(sum(int(f[0]) for f in per_model.values())), sum(f[1] for f in per_model.values())
    split = " · ".join(f"{sanitize_display_name(name)} {format_cost(dollars(int(f[0])))} ({format_tokens(f[1])})"
                       for name, f in sorted(per_model.items(), key=lambda item: (-item[1][0], item[0])))
    return f" {format_cost(cost)} · {format_tokens(tokens)} tokens  —  {split}"


def plain_view(session: AgentSession, agent: TranscriptAgent, paths: AgentPaths | None = None) -> str:
    """The viewer's content for a non-terminal output: title, usage, transcript and status, without styles. With
    `paths`, the whole transcript (as the viewer starts), else what the model sees."""
    whole = read_whole_transcript(session, paths) if paths is not None else None
    lines = whole_transcript_lines(whole) if whole is not None else transcript_lines(agent.messages)
    return "\n".join([title_text(session, agent).strip(), usage_text(session).strip(), "",
                      plain_text(lines), "", status_text(session, agent).strip()])


def read_whole_transcript(session: AgentSession, paths: AgentPaths) -> Transcript | None:
    """The session's file read with the export's reader (every branch); None when there is no file yet. Raises
    ValueError, SessdexError or OSError when it cannot be read."""
    from sessdex.catalog.export.transcript import load_transcript
    from sessdex.core.runtime import SessionRuntime

    path = session.session_file
    if path is None or not path.is_file():
        return None
    return load_transcript(path, SessionRuntime(paths=paths), all_branches=True, redact_secrets=False)


def title_text(session: AgentSession, agent: TranscriptAgent) -> str:
    """The title line: the session's name as `list`, the picker and `search` show it (`display_name`: its title,
    else its file's first user message, even when a compaction took it out of the context) and its id."""
    from sessdex.core.discovery import read_session_info

    path = session.session_file
    info = read_session_info(path) if path is not None and path.is_file() else None
    if info is not None:
        name = display_name(session.session_manager.get_session_name() or info.title, info.first_message,
                            info.message_count, info.id, str(info.path))
    else:  # not written yet (a fork held in memory): the live session's own name, else its first message
        first_user = next((m for m in agent.messages if isinstance(m, dict) and m.get("role") == "user"), None)
        first = plain_text(_content_lines(first_user.get("content"))) if first_user else None
        name = display_name(session.session_manager.get_session_name(), first, 1 if first else 0, None,
                            "(new session)")
    return terminal_text(f" {sanitize_display_name(name)} · {session.session_id}")


class _TranscriptLexer(Lexer):
    """Styles the transcript buffer line by line from the rendered lines."""

    def __init__(self) -> None:
        self.lines: list[Line] = []
        self.version = 0

    def lex_document(self, document: Document) -> Callable[[int], StyleAndTextTuples]:
        lines = self.lines
        return lambda number: lines[number] if number < len(lines) else []  # type: ignore[return-value]

    def invalidation_hash(self) -> int:
        return self.version


# -- the application --------------------------------------------------------------------------------

SessionChooser = Callable[["TranscriptViewer", Callable[[Path | None], None]], None]


class TranscriptViewer:
    """The full-screen viewer of one AgentSession; see the module docstring."""

    def __init__(self, session: AgentSession, agent: TranscriptAgent, *, paths: AgentPaths,
                 session_dir: str | os.PathLike[str] | None = None,
                 choose_session: SessionChooser | None = None) -> None:
        self.session = session
        self.agent = agent
        self.paths = paths
        self.session_dir = session_dir
        self.choose_session = choose_session or PickerChooser()
        self.notice: tuple[str, str] | None = None
        self.exit_requested = False
        self.cancelled = False
        self.app: Application[None] | None = None
        self._lexer = _TranscriptLexer()
        self._buffer = Buffer(read_only=True, name="transcript")
        self._search_toolbar = SearchToolbar(vi_mode=True)  # shows "/" and the text typed, as less does
        self._transcript_window = Window(BufferControl(self._buffer, lexer=self._lexer,
                                                       search_buffer_control=self._search_toolbar.control),
                                         wrap_lines=True)
        self.help_shown = False
        self.whole = True  # the whole transcript (every entry of the file); False: what the model sees
        self.rebuild()

    # -- state ------------------------------------------------------------------------------------

    def rebuild(self) -> None:
        """Redraw the transcript, scrolled to the end: the whole file's (see `whole_transcript_lines`), or the
        agent's messages (the session's context: what the model sees)."""
        whole = self._whole_transcript() if self.whole else None
        lines = whole_transcript_lines(whole) if whole is not None else transcript_lines(self.agent.messages)
        self._lexer.lines = lines
        self._lexer.version += 1
        text = plain_text(lines)
        self._buffer.set_document(Document(text, len(text)), bypass_readonly=True)

    def _whole_transcript(self) -> Transcript | None:
        """The session file read with the export's reader (every branch); None when there is no file to read yet."""
        try:
            return read_whole_transcript(self.session, self.paths)
        except (ValueError, SessdexError, OSError) as exc:
            self.notice = ("class:error", f"Showing what the model sees: cannot read the whole file ({exc})")
            return None

    def toggle_whole(self) -> None:
        """m: switch between the whole transcript and what the model sees."""
        self.whole = not self.whole
        self.notice = ("class:notice", "Whole transcript" if self.whole else "What the model sees")
        self.rebuild()

    @property
    def transcript(self) -> str:
        """The transcript as currently shown, without styles."""
        return self._buffer.text

    def switch_to(self, path: Path | None) -> None:
        """The chooser's answer: None keeps everything; a path is switched to in place and the view rebuilt."""
        if path is None:
            return
        self.notice = None
        try:
            switched = self.session.switch_session(path)
        except (SessdexError, OSError) as exc:
            self.notice = ("class:error", f"Could not switch to {path}: {exc}")
        else:
            if switched:
                self.rebuild()
            self.notice = ("class:notice", RESUMED_NOTICE) if switched else ("class:error", "Switch cancelled")
        if self.app is not None:
            self.app.invalidate()

    def warn(self, message: str) -> None:
        """Show `message` in the notice line."""
        self.notice = ("class:error", message)

    def quit(self) -> None:
        """Leave the viewer."""
        self.exit_requested = True
        if self.app is not None and self.app.is_running:
            self.app.exit()

    # -- layout and keys --------------------------------------------------------------------------

    def _status_fragments(self) -> StyleAndTextTuples:
        view = "whole transcript" if self.whole else "what the model sees"
        return [("class:status", status_text(self.session, self.agent) +
                 f"  ·  {view} (m)  ·  / search  ? keys  r sessions  q quit ")]

    def _notice_fragments(self) -> StyleAndTextTuples:
        return [self.notice] if self.notice else []

    def search_again(self, forward: bool) -> None:
        """n / N: the next match of the last search in its direction (forward) or the other way."""
        if self.app is None:
            return
        state = self.app.current_search_state
        if not state.text:
            self.notice = ("class:dim", "No search yet: / starts one")
            return
        document = self._buffer.document
        if (state.direction == SearchDirection.FORWARD) == forward:
            found = document.find(state.text, include_current_position=False, ignore_case=True)
        else:
            found = document.find_backwards(state.text, ignore_case=True)
        if found is None:
            self.notice = ("class:error", f"Pattern not found: {terminal_text(state.text)}")
        else:
            self.notice = None
            self._buffer.cursor_position += found

    def _key_bindings(self) -> Any:
        bindings = KeyBindings()
        help_bindings = KeyBindings()
        search_bindings = KeyBindings()
        search_bindings.add("enter")(accept_search)
        search_bindings.add("escape", eager=True)(abort_search)
        search_bindings.add("c-c")(abort_search)

        @help_bindings.add("<any>")
        def _close_help(event: KeyPressEvent) -> None:
            self.help_shown = False

        @bindings.add("?")
        def _help(event: KeyPressEvent) -> None:
            self.help_shown = True

        @bindings.add("/")
        def _search(event: KeyPressEvent) -> None:
            self.notice = None
            control = self._transcript_window.content
            assert isinstance(control, BufferControl)
            control.search_state.ignore_case = Condition(lambda: True)
            start_search(control, SearchDirection.FORWARD)

        @bindings.add("n")
        def _next(event: KeyPressEvent) -> None:
            self.search_again(forward=True)

        @bindings.add("N")
        def _previous(event: KeyPressEvent) -> None:
            self.search_again(forward=False)

        @bindings.add("q")
        @bindings.add("c-d")
        def _quit(event: KeyPressEvent) -> None:
            self.quit()

        @bindings.add("escape", eager=True)
        @bindings.add("c-c")
        def _cancel(event: KeyPressEvent) -> None:
            self.cancelled = True  # the CLI exits with 130, like every cancel
            self.quit()

        @bindings.add("r")
        @bindings.add("c-r")
        def _open_chooser(event: KeyPressEvent) -> None:
            self.notice = None
            self.choose_session(self, self.switch_to)

        for key, action in (("down", scroll_one_line_down), ("j", scroll_one_line_down),
                            ("up", scroll_one_line_up), ("k", scroll_one_line_up),
                            ("pagedown", scroll_page_down), ("space", scroll_page_down),
                            ("pageup", scroll_page_up), ("b", scroll_page_up)):
            bindings.add(key)(action)

        @bindings.add("m")
        def _toggle_whole(event: KeyPressEvent) -> None:
            self.toggle_whole()

        @bindings.add("g")
        @bindings.add("home")
        def _top(event: KeyPressEvent) -> None:
            self._buffer.cursor_position = 0

        @bindings.add("G")
        @bindings.add("end")
        def _bottom(event: KeyPressEvent) -> None:
            self._buffer.cursor_position = len(self._buffer.text)

        # While the search line is focused its own keys (typing, Enter to accept, Esc to give up) apply; while the
        # help shows, any key closes it.
        showing_help = Condition(lambda: self.help_shown)
        return merge_key_bindings([
            ConditionalKeyBindings(bindings, ~is_searching & ~showing_help),
            ConditionalKeyBindings(help_bindings, showing_help),
            ConditionalKeyBindings(search_bindings, is_searching),
        ])

    def build_application(self, *, input: Input | None = None, output: Output | None = None) -> Application[None]:
        """The prompt_toolkit application (pass a pipe input and DummyOutput to drive it headless)."""
        help_box = ConditionalContainer(Frame(Window(FormattedTextControl(HELP_TEXT), width=72, height=6),
                                              title="Keys"), filter=Condition(lambda: self.help_shown))
        body = FloatContainer(HSplit([
            Window(FormattedTextControl(lambda: [("class:title", title_text(self.session, self.agent))]),
                   height=1, style="class:title"),
            Window(FormattedTextControl(lambda: [("class:status", usage_text(self.session))]), height=1),
            self._transcript_window,
            self._search_toolbar,
            Window(FormattedTextControl(self._notice_fragments), height=1),
            Window(FormattedTextControl(self._status_fragments), height=1, style="class:status"),
        ]), floats=[Float(help_box)])
        self.app = Application(layout=Layout(body, focused_element=self._transcript_window),
                               key_bindings=self._key_bindings(), style=STYLE, full_screen=True,
                               input=input, output=output)
        return self.app

    def run(self, *, input: Input | None = None, output: Output | None = None) -> None:
        """Show the viewer until the user quits."""
        self.build_application(input=input, output=output).run()


@dataclass
class PickerChooser:
    """The viewer's chooser: the session picker, on the viewer's terminal, while the viewer is suspended.

    `open_source(viewer)` gives the picker its rows (default: the catalog, else a file scan, of the
    viewed session's project; Tab switches to all projects). `on_open(picker)` is called with each
    picker before it runs (tests use it to watch the picker's screen).
    """

    settings: Settings | None = None
    open_source: Callable[[TranscriptViewer], PickerSource] | None = None
    on_open: Callable[[SessionPicker], None] | None = None

    def __call__(self, viewer: TranscriptViewer, done: Callable[[Path | None], None]) -> None:
        """Start the picker in the background of the viewer's event loop."""
        assert viewer.app is not None, "the chooser runs inside the viewer's application"
        viewer.app.create_background_task(self._pick(viewer, viewer.app, done))

    def _source(self, viewer: TranscriptViewer) -> PickerSource:
        if self.open_source is not None:
            return self.open_source(viewer)
        from sessdex.catalog.queries.open_source import open_session_source
        from sessdex.catalog.queries.picker_source import PickerSource
        from sessdex.catalog.store.settings import Settings

        settings = self.settings or Settings.resolve(paths=viewer.paths)
        source = open_session_source(settings, warn=viewer.warn)
        return PickerSource(source, viewer.session.session_manager.get_cwd(), viewer.session_dir)

    async def _pick(self, viewer: TranscriptViewer, app: Application[None],
                    done: Callable[[Path | None], None]) -> None:
        async with in_terminal():
            try:
                result = await self._run_picker(viewer, app)
            except Exception as exc:  # noqa: BLE001 - a broken picker must not take the viewer down: report it
                viewer.warn(f"The session picker failed: {exc}")
                return
            # Still inside: the viewer's first drawing after the picker already shows the outcome.
            if result.outcome == "exit":  # Ctrl+C in the picker leaves the viewer too, as a cancel
                viewer.cancelled = True
                viewer.quit()
            elif result.outcome == "selected" and result.row is not None:
                done(Path(result.row.path))
            else:
                done(None)

    async def _run_picker(self, viewer: TranscriptViewer, app: Application[None]) -> PickerResult:
        from sessdex.catalog.tui.picker import SessionPicker

        source = self._source(viewer)
        try:
            picker = SessionPicker(source, "project", heading="Switch session", input=app.input, output=app.output)
            if self.on_open is not None:
                self.on_open(picker)
            return await picker.run_async()
        finally:
            source.close()


def open_viewer_session(start: Callable[[TranscriptAgent, AnyModelRegistry], AgentSession]
                        ) -> tuple[AgentSession, TranscriptAgent]:
    """An AgentSession over a fresh TranscriptAgent, started by `start(agent, registry)` (open, continue, ...)."""
    agent = TranscriptAgent()
    return start(agent, AnyModelRegistry()), agent
