"""The shape of a session file's records: header validation, the optional leading `title` line, which
files are sessions at all, and the load-time projection of entries."""

from __future__ import annotations

from sessdex.core.paths import is_session_file_name

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from typing import Any

CURRENT_SESSION_VERSION = 3

ENTRY_TYPES = frozenset({
    "message", "thinking_level_change", "model_change", "compaction", "branch_summary", "custom",
    "custom_message", "label", "ttsr_injection", "session_init", "mode_change",
})


def is_session_header(value: Any) -> bool:
    """A valid header is an object with `type == "session"` and a string `id`."""
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def is_listable_session(name: str, header_id: Any) -> bool:
    """The one rule of which files listings show as sessions: `list`, `list_all`, `recent`, `continue`,
    `find_most_recent_session`, the catalog and the picker all ask it.

    `name` is the file name; `header_id` the `id` of its valid header (None when it has none). A
    dot-file is never a session, nor is a header whose id is empty or not a string. (Opening a file
    for writing only needs `is_session_header`, as the agent's loader does.)
    """
    return is_session_file_name(name) and isinstance(header_id, str) and header_id != ""


def is_title_line(value: Any) -> bool:
    """Newer agents may write a `{"type":"title",...}` line before the header."""
    return isinstance(value, dict) and value.get("type") == "title"


class SessionRecords:
    """A session file split into its optional title line, its header and its entries (file order)."""

    __slots__ = ("header", "entries", "title_line")

    def __init__(self, header: dict[str, Any], entries: list[Any] | None = None,
                 title_line: dict[str, Any] | None = None) -> None:
        self.header = header
        self.entries: list[Any] = [] if entries is None else entries
        self.title_line = title_line

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.header, self.entries, self.title_line) == (other.header, other.entries,
                                                                other.title_line)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        return f"SessionRecords(header={self.header!r}, entries={self.entries!r}, title_line={self.title_line!r})"

    @property
    def title(self) -> str | None:
        """The session title: a non-empty title line wins over the header's `title`."""
        line_title = self.title_line.get("title") if self.title_line else None
        if isinstance(line_title, str) and line_title:
            return line_title
        title = self.header.get("title")
        return title if isinstance(title, str) else None


def split_session_records(values: list[Any]) -> SessionRecords | None:
    """Split parsed values into title line, header and entries; None when there is no valid header."""
    title_line = None
    rest = values
    if rest and is_title_line(rest[0]):
        title_line, rest = rest[0], rest[1:]
    if not rest or not is_session_header(rest[0]):
        return None
    return SessionRecords(header=rest[0], entries=list(rest[1:]), title_line=title_line)


# Assistant messages of the OpenAI Responses API from these providers carry replay data the agent drops
# on load: it stays in the file until the next full rewrite.
RESPONSES_API = "openai-responses"
REPLAY_PAYLOAD_PROVIDERS = frozenset({"openai", "github-copilot"})


def strip_replay_payloads(entry: Any) -> Any:
    """The entry as the agent holds it after loading: `providerPayload` and the thinking blocks'
    `thinkingSignature` removed from OpenAI Responses assistant messages of openai / github-copilot."""
    if not isinstance(entry, dict) or entry.get("type") != "message":
        return entry
    message = entry.get("message")
    if not (isinstance(message, dict) and message.get("role") == "assistant" and message.get("api") == RESPONSES_API
            and message.get("provider") in REPLAY_PAYLOAD_PROVIDERS):
        return entry
    stripped = {key: value for key, value in message.items() if key != "providerPayload"}
    content = message.get("content")
    if isinstance(content, list):
        stripped["content"] = [
            {key: value for key, value in block.items() if key != "thinkingSignature"}
            if isinstance(block, dict) and block.get("type") == "thinking" else block
            for block in content
        ]
    return {**entry, "message": stripped}
