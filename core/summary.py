"""What a session file says about itself: an incremental fold over its records, and `SessionInfo`.

`SessionSummary` is fed a file's parsed JSON values in file order (an optional `title` line, the
header, then the entries). It is the single definition of every listing field, shared by the
file-scan `list()` and by the catalog indexer, which stores `to_state()` and resumes the fold on
appended bytes with `from_state()`: both paths give the same answers by construction.

Field rules, as the specification and the recorded agent give them:
- message_count counts every `message` entry, whatever its role or content;
- only user and assistant messages contribute searchable text: a string content, or the `text`
  blocks of a content list joined with a space; empty text contributes nothing;
- first_message is the first user text; title is the title line's title, else the header's
  title, else the latest compaction `shortSummary`;
- non-object records and unknown entry types are counted as entries and otherwise ignored.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from sessdex.core.paths import as_path
from sessdex.core.records import is_session_header, is_title_line

TYPE_CHECKING = False  # no typing (nor dataclasses) on the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any

NO_MESSAGES = "(no messages)"
_INFINITY = float("inf")
STATE_VERSION = 1

_BEFORE_HEADER, _IN_BODY, _INVALID = "before_header", "body", "invalid"


def message_text(message: Any) -> str:
    """The searchable text of an agent message: string content, or its text blocks joined by spaces."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [block["text"] for block in content
                 if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)]
        return " ".join(texts)
    return ""


def _number(value: Any) -> float:
    """A usage figure as a number; anything else (missing, bool, text, NaN) counts as zero."""
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is float and -_INFINITY < value < _INFINITY:  # finite (NaN fails every comparison)
        return float(value)
    return 0


def _non_empty_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class SessionSummary:
    """Incremental fold over one session file's records; see the module docstring for the field rules."""

    def __init__(self) -> None:
        self._phase = _BEFORE_HEADER
        self._title_line_title: str | None = None
        self._header: dict[str, Any] | None = None
        self._compaction_short_summary: str | None = None
        self._message_count = 0
        self._entry_count = 0
        self._first_message: str | None = None
        self._last_entry_id: str | None = None
        self._last_model: str | None = None
        self._input_tokens: float = 0
        self._output_tokens: float = 0
        self._cache_read_tokens: float = 0
        self._cache_write_tokens: float = 0
        self._cost_total: float = 0

    # -- folding ---------------------------------------------------------------------------------

    def feed(self, value: object) -> str | None:
        """Fold one parsed record (file order); return the searchable message text it adds, or None."""
        texts = self.feed_all((value,))
        return texts[0] if texts else None

    def feed_all(self, values: Sequence[object], texts_wanted: bool = True) -> list[str]:
        """Fold parsed records (file order); return the searchable texts they add, in order.

        The same as `feed` on each record, and the loop the indexer runs over every record of a corpus:
        hence the fields kept in locals and the rules of the module docstring written out inline.
        `texts_wanted=False` folds the same state but returns no texts (and spends nothing on them).
        """
        position, count = 0, len(values)
        while self._phase == _BEFORE_HEADER and position < count:
            self._feed_before_header(values[position])
            position += 1
        if self._phase != _IN_BODY or position == count:
            return []
        texts: list[str] = []
        entry_count, message_count = self._entry_count, self._message_count
        first_message, last_entry_id, last_model = self._first_message, self._last_entry_id, self._last_model
        compaction_short_summary = self._compaction_short_summary
        input_tokens, output_tokens = self._input_tokens, self._output_tokens
        cache_read_tokens, cache_write_tokens, cost_total = (self._cache_read_tokens, self._cache_write_tokens,
                                                             self._cost_total)
        for index in range(position, count):
            entry = values[index]
            entry_count += 1
            if not isinstance(entry, dict):
                continue
            entry_id = entry.get("id")
            if isinstance(entry_id, str):
                last_entry_id = entry_id
            kind = entry.get("type")
            if kind == "message":
                message_count += 1
                message = entry.get("message")
                if not isinstance(message, dict):
                    continue
                role = message.get("role")
                if role == "assistant":
                    provider, model = message.get("provider"), message.get("model")
                    if isinstance(provider, str) and isinstance(model, str) and provider and model:
                        last_model = f"{provider}/{model}"
                    usage = message.get("usage")
                    if isinstance(usage, dict):
                        input_tokens += _number(usage.get("input"))
                        output_tokens += _number(usage.get("output"))
                        cache_read_tokens += _number(usage.get("cacheRead"))
                        cache_write_tokens += _number(usage.get("cacheWrite"))
                        cost = usage.get("cost")
                        if isinstance(cost, dict):
                            cost_total += _number(cost.get("total"))
                elif role != "user":
                    continue
                if not texts_wanted and (role != "user" or first_message is not None):
                    continue  # its text would only be returned
                text = message_text(message)
                if not text:
                    continue
                if first_message is None and role == "user":
                    first_message = text
                if texts_wanted:
                    texts.append(text)
            elif kind == "compaction":
                short_summary = entry.get("shortSummary")
                if isinstance(short_summary, str) and short_summary:
                    compaction_short_summary = short_summary
            elif kind == "model_change":
                model = entry.get("model")
                if isinstance(model, str) and entry.get("role", "default") in (None, "default"):
                    last_model = model
        self._entry_count, self._message_count = entry_count, message_count
        self._first_message, self._last_entry_id, self._last_model = first_message, last_entry_id, last_model
        self._compaction_short_summary = compaction_short_summary
        self._input_tokens, self._output_tokens = input_tokens, output_tokens
        self._cache_read_tokens, self._cache_write_tokens, self._cost_total = (cache_read_tokens, cache_write_tokens,
                                                                               cost_total)
        return texts

    def _feed_before_header(self, value: object) -> None:
        """An optional title line, then the header; anything else first makes the file invalid."""
        if isinstance(value, dict) and is_title_line(value) and self._title_line_title is None and self._header is None:
            self._title_line_title = _non_empty_str(value.get("title")) or ""
        elif is_session_header(value) and value["id"]:  # type: ignore[index]
            # An empty id is no session for listings, though the loader accepts it.
            self._header = {key: value[key] for key in ("id", "cwd", "title", "timestamp", "parentSession")  # type: ignore[index]
                            if key in value}  # type: ignore[operator]
            self._phase = _IN_BODY
        else:
            self._phase = _INVALID

    # -- persistence of the fold -------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """The fold's state as a small JSON-serializable dict (no message texts beyond the first)."""
        return {
            "v": STATE_VERSION,
            "phase": self._phase,
            "title_line_title": self._title_line_title,
            "header": self._header,
            "compaction_short_summary": self._compaction_short_summary,
            "message_count": self._message_count,
            "entry_count": self._entry_count,
            "first_message": self._first_message,
            "last_entry_id": self._last_entry_id,
            "last_model": self._last_model,
            "input_tokens": self._input_tokens,
            "output_tokens": self._output_tokens,
            "cache_read_tokens": self._cache_read_tokens,
            "cache_write_tokens": self._cache_write_tokens,
            "cost_total": self._cost_total,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SessionSummary:
        """Rebuild a fold from `to_state()` output, ready to be fed the records that follow."""
        if state.get("v") != STATE_VERSION:
            raise ValueError(f"unsupported SessionSummary state version: {state.get('v')!r}")
        summary = cls()
        summary._phase = state["phase"]
        summary._title_line_title = state["title_line_title"]
        summary._header = dict(state["header"]) if state["header"] is not None else None
        summary._compaction_short_summary = state["compaction_short_summary"]
        summary._message_count = state["message_count"]
        summary._entry_count = state["entry_count"]
        summary._first_message = state["first_message"]
        summary._last_entry_id = state["last_entry_id"]
        summary._last_model = state["last_model"]
        summary._input_tokens = state["input_tokens"]
        summary._output_tokens = state["output_tokens"]
        summary._cache_read_tokens = state["cache_read_tokens"]
        summary._cache_write_tokens = state["cache_write_tokens"]
        summary._cost_total = state["cost_total"]
        return summary

    # -- read-only view ----------------------------------------------------------------------------

    @property
    def header_valid(self) -> bool:
        """True once a valid header with a non-empty id was read as the first record (after an optional
        title line): what listings need of a file's content (`records.is_listable_session`)."""
        return self._header is not None and self._phase == _IN_BODY

    @property
    def header_decided(self) -> bool:
        """True once the records fed settle whether the file has a valid header (`header_valid` says which):
        the first record, or the first two when the first is a title line. The records after never change it."""
        return self._phase != _BEFORE_HEADER

    def _header_field(self, key: str) -> Any:
        return self._header.get(key) if self._header is not None else None

    @property
    def session_id(self) -> str | None:
        value = self._header_field("id")
        return value if isinstance(value, str) else None

    @property
    def cwd(self) -> str:
        """The header's cwd, or "" when the header has none."""
        cwd = self._header_field("cwd")
        return cwd if isinstance(cwd, str) else ""

    @property
    def header_title(self) -> str | None:
        """The title the file itself names: a non-empty title line, else a non-empty header title."""
        return self._title_line_title or _non_empty_str(self._header_field("title"))

    @property
    def title(self) -> str | None:
        """The listing title: the file's own title, else the latest compaction shortSummary.

        A header that sets its title to "" keeps that empty title (the agent's listings do not fall back then).
        """
        own = self.header_title
        if own:
            return own
        if not self._title_line_title and self._header_field("title") == "":
            return ""
        return self._compaction_short_summary

    @property
    def parent_session(self) -> str | None:
        parent = self._header_field("parentSession")
        return parent if isinstance(parent, str) else None

    @property
    def created(self) -> str | None:
        """The header timestamp as written (an ISO string), or None."""
        timestamp = self._header_field("timestamp")
        return timestamp if isinstance(timestamp, str) else None

    @property
    def message_count(self) -> int:
        return self._message_count

    @property
    def entry_count(self) -> int:
        return self._entry_count

    @property
    def first_message(self) -> str | None:
        return self._first_message

    @property
    def last_entry_id(self) -> str | None:
        return self._last_entry_id

    @property
    def last_model(self) -> str | None:
        """`provider/model` of the latest assistant message or default-role model_change."""
        return self._last_model

    @property
    def input_tokens(self) -> float:
        return self._input_tokens

    @property
    def output_tokens(self) -> float:
        return self._output_tokens

    @property
    def cache_read_tokens(self) -> float:
        return self._cache_read_tokens

    @property
    def cache_write_tokens(self) -> float:
        return self._cache_write_tokens

    @property
    def cost_total(self) -> float:
        return self._cost_total


class SessionInfo:
    """One session as `list()`/`list_all()` report it; dates are timezone-aware UTC.

    Immutable, compared, hashed and shown by its fields in this order (a frozen dataclass before; a
    plain class keeps dataclasses and its imports off the hot commands).
    """

    __slots__ = ("path", "id", "cwd", "title", "message_count", "first_message", "all_messages_text", "created",
                 "modified", "parent_session", "cost", "total_tokens")
    path: Path
    id: str
    cwd: str
    title: str | None
    message_count: int
    first_message: str
    all_messages_text: str
    created: datetime
    modified: datetime
    parent_session: str | None
    cost: float  # the file's summed usage.cost.total (every assistant message in it, copies included)
    total_tokens: float  # the file's summed input + output + cacheRead + cacheWrite tokens

    def __init__(self, path: Path, id: str, cwd: str, title: str | None, message_count: int,
                 first_message: str, all_messages_text: str, created: datetime, modified: datetime,
                 parent_session: str | None = None, cost: float = 0, total_tokens: float = 0) -> None:
        set_field = object.__setattr__
        set_field(self, "path", path)
        set_field(self, "id", id)
        set_field(self, "cwd", cwd)
        set_field(self, "title", title)
        set_field(self, "message_count", message_count)
        set_field(self, "first_message", first_message)
        set_field(self, "all_messages_text", all_messages_text)
        set_field(self, "created", created)
        set_field(self, "modified", modified)
        set_field(self, "parent_session", parent_session)
        set_field(self, "cost", cost)
        set_field(self, "total_tokens", total_tokens)

    @property
    def path_text(self) -> str:
        """`path` as a string."""
        return os.fspath(self.path)

    def fields(self) -> dict[str, Any]:
        """Every field by name, in order (what `dataclasses.asdict` gave)."""
        return {name: getattr(self, name) for name in SessionInfo.__slots__}

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in SessionInfo.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: SessionInfo is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: SessionInfo is immutable")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in SessionInfo.__slots__)
        return f"{self.__class__.__qualname__}({shown})"

    @property
    def parent_session_path(self) -> str | None:
        """The header's `parentSession` (what the agent's SessionInfo calls `parentSessionPath`)."""
        return self.parent_session

    def to_agent_json(self) -> dict[str, Any]:
        """The agent's SessionInfo shape (camelCase keys, `title` and `parentSessionPath` only when set,
        dates as datetimes)."""
        result: dict[str, Any] = {"path": str(self.path), "id": self.id, "cwd": self.cwd}
        if self.title is not None:
            result["title"] = self.title
        result.update({
            "created": self.created,
            "modified": self.modified,
            "messageCount": self.message_count,
            "firstMessage": self.first_message,
            "allMessagesText": self.all_messages_text,
        })
        if self.parent_session is not None:
            result["parentSessionPath"] = self.parent_session
        return result


# The range a datetime holds, a day inside each end so that any local time zone fits too.
MIN_EPOCH_MS = -62_135_596_800_000 + 86_400_000  # 0001-01-02T00:00:00Z
MAX_EPOCH_MS = 253_402_214_400_000  # 9999-12-31T00:00:00Z


def clamp_epoch_ms(epoch_ms: float) -> float:
    """An epoch-ms time moved into the range datetimes can hold (a file mtime in year 5000 or 30000 is legal)."""
    if epoch_ms != epoch_ms:  # NaN
        return 0
    return min(max(epoch_ms, MIN_EPOCH_MS), MAX_EPOCH_MS)


def datetime_from_ms(epoch_ms: float) -> datetime:
    """A UTC datetime at millisecond precision (what the agent's Date keeps), clamped to datetime's range."""
    return datetime.fromtimestamp(int(clamp_epoch_ms(epoch_ms) // 1) / 1000, tz=UTC)  # (math.floor, without math)


def parse_iso_timestamp(text: str | None) -> datetime | None:
    """Parse an ISO-8601 timestamp (a trailing `Z` allowed) into an aware UTC datetime, or None."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # not ISO, or out of range once moved to UTC (year 1 at -05:00)
        return None


def session_info(path: Path, summary: SessionSummary, all_messages_text: str, modified_ms: float) -> SessionInfo:
    """Build the SessionInfo of a file whose records `summary` folded; `modified_ms` is its mtime (epoch ms).

    `created` is the header timestamp (the modification time when the header has no usable one).
    Raises ValueError when the summary never saw a valid header: such a file is not a session.
    """
    if not summary.header_valid or summary.session_id is None:
        raise ValueError(f"{path} has no valid session header")
    from sessdex.core.text import without_lone_surrogates  # lazy: off the catalog's hot paths

    modified = datetime_from_ms(modified_ms)
    title = summary.title
    parent = summary.parent_session
    return SessionInfo(
        path=as_path(path),
        id=without_lone_surrogates(summary.session_id),
        cwd=without_lone_surrogates(summary.cwd),
        title=without_lone_surrogates(title) if title is not None else None,
        message_count=summary.message_count,
        first_message=without_lone_surrogates(summary.first_message) if summary.first_message is not None else NO_MESSAGES,
        all_messages_text=without_lone_surrogates(all_messages_text),
        created=parse_iso_timestamp(summary.created) or modified,
        modified=modified,
        parent_session=without_lone_surrogates(parent) if parent is not None else None,
        cost=summary.cost_total,
        total_tokens=summary.input_tokens + summary.output_tokens + summary.cache_read_tokens
        + summary.cache_write_tokens,
    )
