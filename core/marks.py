"""Pins, stars, tags and notes: the append-only marks file of an agent dir, and the marks it adds up to.

Marks live in `<agent dir>/sessdex/marks.jsonl`, one event per line:

    {"session": "<id>", "machine": "<name>", "op": "pin", "time": 1767225600000}
    {"session": "<id>", "machine": "<name>", "op": "tag", "add": ["bug"], "remove": ["wip"], "time": ...}
    {"session": "<id>", "machine": "<name>", "op": "note", "text": "look at the parser" | null, "time": ...}

(`op` is one of pin, unpin, star, unstar, tag, note; `time` is milliseconds since the epoch). A mark follows the
session id, never a path, so renaming, trashing and restoring a session keep its marks; a fork has a new id and
starts unmarked. The file is written like a session file: each event is one locked append through the session
writer (`core.storage.FileWriter`: it ends a torn last line first) and fsynced before the call returns, so a
process killed mid-write loses at most its own event. Only complete lines (ending in a newline) are read; a
line that is not a well-formed event is skipped and counted.

Every event becomes facts (`MarkFact`): one per (session, kind, key), kind "pin", "star", "tag" (the key is the
tag) or "note". The latest fact of each triple decides: within one file, the later line; across the files of
several machines (a shared catalog), the later time, then the machine name, then the line. Standard library
and orjson only: the catalog indexes the same facts (`sessdex.catalog.index.marks_index`).
"""

from __future__ import annotations

import os
import stat as stat_module
import time

from sessdex.core.errors import SessdexError, UsageError
from sessdex.core.private_files import PRIVATE_FILE_MODE, make_private_dirs

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path
    from typing import Any, TypeVar

    from sessdex.core.paths import AgentPaths

    Item = TypeVar("Item")

MARKS_DIR_NAME = "sessdex"
MARKS_FILE_NAME = "marks.jsonl"
OPS = ("pin", "unpin", "star", "unstar", "tag", "note")
MAX_TAG_CHARS = 64
MAX_NOTE_CHARS = 4096
MAX_TAGS_PER_EVENT = 64


class MarksFileError(SessdexError):
    """The marks file cannot be used safely (a symlink, not a regular file, owned by someone else)."""


def marks_path(paths: AgentPaths) -> Path:
    """`<agent dir>/sessdex/marks.jsonl`."""
    return paths.agent_dir / MARKS_DIR_NAME / MARKS_FILE_NAME


def marks_path_text(paths: AgentPaths) -> str:
    """`marks_path` as a string, without making Paths (the listing commands read it on every run)."""
    return os.path.join(paths.agent_dir_text, MARKS_DIR_NAME, MARKS_FILE_NAME)


class Marks:
    """The current marks of one session: pinned, starred, its tags (sorted) and its note (None when none)."""

    __slots__ = ("pinned", "starred", "tags", "note")

    def __init__(self, pinned: bool = False, starred: bool = False, tags: tuple[str, ...] = (),
                 note: str | None = None) -> None:
        self.pinned = pinned
        self.starred = starred
        self.tags = tags
        self.note = note

    @property
    def empty(self) -> bool:
        """True when the session carries no mark at all (cleanup may move it)."""
        return not (self.pinned or self.starred or self.tags or self.note)

    def to_json(self) -> dict[str, Any]:
        return {"pinned": self.pinned, "starred": self.starred, "tags": list(self.tags), "note": self.note}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Marks) and (self.pinned, self.starred, self.tags, self.note) == \
            (other.pinned, other.starred, other.tags, other.note)

    def __hash__(self) -> int:
        return hash((self.pinned, self.starred, self.tags, self.note))

    def __repr__(self) -> str:
        return f"Marks(pinned={self.pinned}, starred={self.starred}, tags={self.tags!r}, note={self.note!r})"


NO_MARKS = Marks()


class MarkFact:
    """The state one event gives a (session, kind, key): `active` (pinned, starred, tagged, a note set), the note's
    `text`, and what orders it among the other facts of the triple: `time_ms`, `machine`, `seq` (line number)."""

    __slots__ = ("machine", "session_id", "kind", "key", "active", "text", "time_ms", "seq")

    def __init__(self, machine: str, session_id: str, kind: str, key: str, active: bool, text: str | None,
                 time_ms: int, seq: int) -> None:
        self.machine = machine
        self.session_id = session_id
        self.kind = kind
        self.key = key
        self.active = active
        self.text = text
        self.time_ms = time_ms
        self.seq = seq

    @property
    def order(self) -> tuple[int, str, int]:
        return (self.time_ms, self.machine, self.seq)

    def as_tuple(self) -> tuple[Any, ...]:
        return (self.machine, self.session_id, self.kind, self.key, self.active, self.text, self.time_ms, self.seq)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MarkFact) and self.as_tuple() == other.as_tuple()

    def __hash__(self) -> int:
        return hash(self.as_tuple())

    def __repr__(self) -> str:
        return f"MarkFact{self.as_tuple()!r}"


# -- checking what users type --------------------------------------------------------------------------

def valid_tag(tag: str) -> str:
    """`tag` as stored (lower-cased), or UsageError: one word of visible characters, no leading + or -."""
    if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG_CHARS or tag[0] in "+-" or \
            not tag.isprintable() or any(char.isspace() for char in tag):
        raise UsageError(f"{tag!r} is not a tag: one word of at most {MAX_TAG_CHARS} visible characters, "
                         "not starting with + or -")
    return tag.lower()


def valid_note(text: str) -> str:
    """A note as stored (surrounding whitespace trimmed), or UsageError when it is empty or too long."""
    trimmed = text.strip() if isinstance(text, str) else ""
    if not trimmed:
        raise UsageError("a note needs some text (use --clear to remove a note)")
    if len(trimmed) > MAX_NOTE_CHARS:
        raise UsageError(f"a note holds at most {MAX_NOTE_CHARS} characters")
    return trimmed


# -- events -> facts -----------------------------------------------------------------------------------

def _event_facts(event: Any, seq: int) -> list[MarkFact] | None:
    """The facts of one event read from the file; None when it is not a well-formed event (a bad line)."""
    if not isinstance(event, dict):
        return None
    session, machine, op, moment = event.get("session"), event.get("machine"), event.get("op"), event.get("time")
    if not (isinstance(session, str) and session and isinstance(machine, str) and op in OPS
            and type(moment) is int and moment >= 0):
        return None
    if op in ("pin", "unpin", "star", "unstar"):
        kind = op[2:] if op.startswith("un") else op
        return [MarkFact(machine, session, kind, "", not op.startswith("un"), None, moment, seq)]
    if op == "note":
        text = event.get("text")
        if text is not None and not (isinstance(text, str) and 0 < len(text) <= MAX_NOTE_CHARS):
            return None
        return [MarkFact(machine, session, "note", "", text is not None, text, moment, seq)]
    added, removed = event.get("add", []), event.get("remove", [])
    if not (isinstance(added, list) and isinstance(removed, list)):
        return None
    facts = []
    for active, tags in ((False, removed), (True, added)):  # a tag both added and removed ends up added
        for tag in tags:
            try:
                facts.append(MarkFact(machine, session, "tag", valid_tag(tag), active, None, moment, seq))
            except UsageError:
                return None
    return facts


def latest_facts(facts: Iterable[MarkFact]) -> dict[tuple[str, str, str], MarkFact]:
    """The deciding fact of each (session, kind, key): the greatest `order` (time, machine, line)."""
    latest: dict[tuple[str, str, str], MarkFact] = {}
    for fact in facts:
        triple = (fact.session_id, fact.kind, fact.key)
        known = latest.get(triple)
        if known is None or fact.order >= known.order:
            latest[triple] = fact
    return latest


def file_facts(events: Iterable[Any]) -> tuple[list[MarkFact], int]:
    """The deciding facts of one machine's marks file, given its events in file order, and how many were bad.

    Within a file the later line wins whatever its time says (a clock set back must not undo a newer mark), so
    each fact's time is raised to at least the latest time before it.
    """
    facts: list[MarkFact] = []
    bad = 0
    highest = 0
    for seq, event in enumerate(events):
        found = _event_facts(event, seq)
        if found is None:
            bad += 1
            continue
        for fact in found:
            highest = max(highest, fact.time_ms)
            fact.time_ms = highest
            facts.append(fact)
    return list(latest_facts(facts).values()), bad


def marks_of_facts(facts: Iterable[MarkFact]) -> dict[str, Marks]:
    """Session id -> its current marks, from the facts of one or more machines' files (unmarked sessions left out)."""
    by_session: dict[str, Marks] = {}
    for fact in latest_facts(facts).values():
        if not fact.active:
            continue
        marks = by_session.get(fact.session_id)
        if marks is None:
            marks = by_session[fact.session_id] = Marks()
        if fact.kind == "pin":
            marks.pinned = True
        elif fact.kind == "star":
            marks.starred = True
        elif fact.kind == "note":
            marks.note = fact.text
        else:
            marks.tags = (*marks.tags, fact.key)
    for marks in by_session.values():
        marks.tags = tuple(sorted(marks.tags))
    return by_session


# -- the file ----------------------------------------------------------------------------------------------

def _check_ours(path: str, result: os.stat_result) -> None:
    """Refuse a marks file that is not a regular file of this user (another user's file is never ours to use)."""
    if stat_module.S_ISLNK(result.st_mode):
        raise MarksFileError(f"{path} is a symbolic link: sessdex never writes through one")
    if not stat_module.S_ISREG(result.st_mode):
        raise MarksFileError(f"{path} is not a regular file")
    if hasattr(os, "getuid") and result.st_uid != os.getuid():
        raise MarksFileError(f"{path} belongs to another user: sessdex leaves it alone")


def read_marks_bytes(path: str | os.PathLike[str]) -> bytes | None:
    """The complete lines of the marks file (a torn last line left out), None when there is no file yet."""
    from sessdex.core.regular_files import read_regular_file

    text = os.fspath(path)
    try:
        _check_ours(text, os.lstat(text))
        data = read_regular_file(text, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return data[:data.rfind(b"\n") + 1]


def read_events(path: str | os.PathLike[str]) -> tuple[list[Any], int]:
    """The values of the marks file's complete lines, in file order, and how many lines were not JSON."""
    data = read_marks_bytes(path)
    if not data:
        return [], 0
    from sessdex.core.jsonl import parse_jsonl

    parsed = parse_jsonl(data)
    return parsed.values, parsed.bad_records


def read_file_facts(path: str | os.PathLike[str]) -> tuple[list[MarkFact], int]:
    """The deciding facts of the marks file at `path` and how many of its lines were bad."""
    events, unparseable = read_events(path)
    facts, bad = file_facts(events)
    return facts, unparseable + bad


def current_marks(paths: AgentPaths) -> dict[str, Marks]:
    """Session id -> marks, read from this agent dir's marks file (the answer without a catalog)."""
    return marks_of_facts(read_file_facts(marks_path_text(paths))[0])


def _open_writer(path: str) -> Any:
    """The session writer (`FileWriter`: locked appends, a torn last line ended first) on the marks file, opened
    without following a symlink and checked to be this user's regular file."""
    import errno
    from pathlib import Path

    from sessdex.core.storage import FileWriter

    class MarksWriter(FileWriter):
        def _open(self) -> int:
            fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                         PRIVATE_FILE_MODE)
            try:
                _check_ours(os.fspath(self._path), os.fstat(fd))
            except BaseException:
                os.close(fd)
                raise
            return fd

    try:
        return MarksWriter(Path(path))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MarksFileError(f"{path} is a symbolic link: sessdex never writes through one") from None
        raise


def make_event(session_id: str, machine: str, op: str, *, now_ms: int | None = None, **fields: Any) -> dict[str, Any]:
    """One marks event (see the module docstring); `fields` are `add`/`remove` for a tag, `text` for a note."""
    if op not in OPS:
        raise ValueError(f"unknown marks operation {op!r}")
    moment = int(time.time() * 1000) if now_ms is None else now_ms
    return {"session": session_id, "machine": machine, "op": op, **fields, "time": moment}


def events_restoring(marks: Marks, session_id: str, machine: str, *, now_ms: int | None = None
                     ) -> list[dict[str, Any]]:
    """The events that give `session_id` the marks `marks` (a fork that keeps its source's marks)."""
    moment = int(time.time() * 1000) if now_ms is None else now_ms
    events = [make_event(session_id, machine, op, now_ms=moment) for op, on in
              (("pin", marks.pinned), ("star", marks.starred)) if on]
    if marks.tags:
        events.append(make_event(session_id, machine, "tag", now_ms=moment, add=list(marks.tags), remove=[]))
    if marks.note:
        events.append(make_event(session_id, machine, "note", now_ms=moment, text=marks.note))
    return events


def append_events(paths: AgentPaths, events: Iterable[dict[str, Any]]) -> None:
    """Append events to the marks file, each under the writers' lock, then fsync: durable when this returns.

    The folder is made 0700 and the file 0600; a symlink, a non-regular file or another user's file is refused.
    """
    from sessdex.core.jsonl import dumps_line

    events = list(events)
    lines = [dumps_line(event) for event in events]
    for event in events:
        if _event_facts(event, 0) is None:
            raise ValueError(f"not a marks event: {event!r}")
    path = marks_path_text(paths)
    folder = os.path.dirname(path)
    make_private_dirs(folder)
    _check_folder(folder)
    writer = _open_writer(path)
    try:
        for line in lines:
            writer.write_line(line)
        writer.fsync()
    finally:
        writer.close()
    from pathlib import Path

    from sessdex.core.storage import fsync_directory

    fsync_directory(Path(folder))


def _check_folder(folder: str) -> None:
    """Refuse a marks folder that is a symlink or someone else's."""
    result = os.lstat(folder)
    if stat_module.S_ISLNK(result.st_mode) or not stat_module.S_ISDIR(result.st_mode):
        raise MarksFileError(f"{folder} is not a folder of sessdex's (a symbolic link or a file)")
    if hasattr(os, "getuid") and result.st_uid != os.getuid():
        raise MarksFileError(f"{folder} belongs to another user: sessdex leaves it alone")


def marks_match(marks: Marks | None, *, pinned: bool = False, starred: bool = False,
                tags: Sequence[str] = ()) -> bool:
    """Whether a session's marks (None: it has none) hold every condition asked for: pinned, starred, each tag."""
    if not (pinned or starred or tags):
        return True
    if marks is None:
        return False
    return (marks.pinned or not pinned) and (marks.starred or not starred) and all(tag in marks.tags for tag in tags)


def pinned_first(items: Sequence[Item], marks: dict[str, Any], session_id: Callable[[Item], str]) -> list[Item]:
    """The items with pinned sessions first, each part in its own order (`list` and the picker)."""
    if not marks:
        return list(items)
    pinned = [item for item in items if getattr(marks.get(session_id(item)), "pinned", False)]
    if not pinned:
        return list(items)
    return [*pinned, *(item for item in items if not getattr(marks.get(session_id(item)), "pinned", False))]
