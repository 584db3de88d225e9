"""A session read for export: header, title, the chosen path (or the whole tree), per-model totals, and the entries
themselves read back from the file one at a time as a renderer asks for them.

A session can be hundreds of megabytes, so an export never holds it whole. A first pass reads the file in large
blocks and keeps, per entry, only its place in the file, its id and parent id, and what the page's header needs
(title, per-model totals, last time). Most of a large session's bytes are tool results and prompts, whose lines that
pass reads by their first bytes without parsing them (see `_MESSAGE_START`), so it costs little more than reading
the file: a web page shows a transcript's first screen soon after. Renderers then iterate `Transcript.shown` (or
walk `tree_order()`), which reads each entry again at its offset, resolves its blobs and redacts it: memory stays
bounded by the longest line.

Files that need more than that first pass — an older version the agent would migrate on load, or a damaged line the
lenient parser must read across lines — are loaded whole with `load_session_file`, exactly as the agent would load
them (such files are old or broken, and small in practice). Nothing is ever written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, overload

from sessdex.catalog.export.lines import line_blocks, lines_of
from sessdex.catalog.secrets import RedactedText, keywords_in, redact, redact_head, redact_value, secret_places
from sessdex.core.blobs import BlobStore
from sessdex.core.context import path_to_leaf
from sessdex.core.errors import SessionFileError
from sessdex.core.jsonl import UTF8_BOM, parse_jsonl, parse_line
from sessdex.core.records import CURRENT_SESSION_VERSION, is_session_header, is_title_line
from sessdex.core.regular_files import open_regular
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import load_session_file, project_loaded_entry

_WHITESPACE = b" \t\r\n"


@dataclass(slots=True)
class ModelTotals:
    """Tokens and cost of one model's assistant messages."""

    messages: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    def add(self, message: dict[str, Any]) -> None:
        self.messages += 1
        usage: dict[str, Any] = message["usage"] if isinstance(message.get("usage"), dict) else {}
        for key, attr in (("input", "input"), ("output", "output"), ("cacheRead", "cache_read"),
                          ("cacheWrite", "cache_write")):
            amount = usage.get(key)
            if isinstance(amount, int):
                setattr(self, attr, getattr(self, attr) + amount)
        cost = usage.get("cost")
        total = cost.get("total") if isinstance(cost, dict) else None
        if isinstance(total, (int, float)):
            self.cost += float(total)


def _assistant_model(entry: Any) -> tuple[str, dict[str, Any]] | None:
    message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "message" else None
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    return str(message.get("model") or "unknown"), message


def model_totals(entries: list[dict[str, Any]]) -> dict[str, ModelTotals]:
    """Per model: assistant message count, tokens and cost."""
    totals: dict[str, ModelTotals] = {}
    for entry in entries:
        found = _assistant_model(entry)
        if found is not None:
            totals.setdefault(found[0], ModelTotals()).add(found[1])
    return totals


class EntryStream:
    """A sequence of entries read again each time it is iterated or sliced: `len()` is known, and the entries come
    one at a time (a slice reads only the entries in it)."""

    def __init__(self, indexes: Sequence[int], read: Callable[[Iterable[int]], Iterator[dict[str, Any]]]) -> None:
        self._indexes = indexes
        self._read = read

    @classmethod
    def of(cls, entries: list[dict[str, Any]]) -> EntryStream:
        """A stream over entries already in memory."""
        return cls(range(len(entries)), lambda indexes: (entries[index] for index in indexes))

    def __len__(self) -> int:
        return len(self._indexes)

    def __bool__(self) -> bool:
        return bool(self._indexes)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._read(self._indexes)

    @overload
    def __getitem__(self, item: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, item: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, item: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(item, slice):
            return list(self._read(self._indexes[item]))
        return next(self._read((self._indexes[item],)))


@dataclass(slots=True)
class _Outline:
    """The first pass over a session file: where each entry is and what the page header needs."""

    header: dict[str, Any]
    title_line: dict[str, Any] | None
    offsets: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)  # where each entry's line ends (past its newline)
    skeletons: list[dict[str, Any]] = field(default_factory=list)  # {"id", "parentId", "index"} per entry
    assistants: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # index -> (model, usage)
    session_name: str | None = None
    last_timestamp: Any = None


class _NeedsWholeLoad(Exception):
    """The file needs the whole-file loader (an older version, or damage the line-by-line pass cannot decide)."""


# The start of a message line as the agent writes it (compact JSON, keys in this order): its type, id, parent id,
# time and role are read here without parsing the line. The outline needs nothing else of a user message, a tool
# result or a shell run, which hold nearly all the bytes of a large session; every other line is parsed.
_MESSAGE_START = re.compile(rb'\{"type":"message","id":"([\w-]{1,128})","parentId":(?:null|"([\w-]{1,128})"),'
                            rb'"timestamp":("[\w:.+-]{1,64}"|null),"message":\{"role":"(?:user|toolResult|bashExecution)"')


def _outline(handle: BinaryIO) -> _Outline | None:
    """Read the file once; None when it has no valid session header.

    A line `_MESSAGE_START` recognises is not parsed when it ends the way a whole line does (`}` and a newline):
    a damaged line that still looks whole is found when the entry is read (see `_read_entry`)."""
    outline: _Outline | None = None
    title_line = None
    for block_offset, block in line_blocks(handle):
        for start, end in lines_of(block):
            if block_offset == 0 and start == 0 and block.startswith(UTF8_BOM):
                start += len(UTF8_BOM)
            if outline is not None and block[end - 2:end] == b"}\n":
                found = _MESSAGE_START.match(block, start)
                if found is not None:
                    entry_id, parent_id, timestamp = found.group(1, 2, 3)
                    outline.offsets.append(block_offset + start)
                    outline.ends.append(block_offset + end)
                    outline.skeletons.append({"index": len(outline.skeletons), "id": entry_id.decode("ascii"),
                                              "parentId": parent_id.decode("ascii") if parent_id else None})
                    if timestamp != b"null":
                        outline.last_timestamp = timestamp[1:-1].decode("ascii")
                    continue
            line = block[start:end]
            if not line.strip(_WHITESPACE):
                continue
            ok, value = parse_line(line)
            if not ok:
                if not line.endswith(b"\n"):
                    continue  # a torn last line: the agent drops it too
                raise _NeedsWholeLoad  # the lenient parser may read a damaged value across lines
            if outline is None:
                if title_line is None and is_title_line(value):
                    title_line = value
                    continue
                if not is_session_header(value):
                    return None
                version = value.get("version")
                if not isinstance(version, int) or version < CURRENT_SESSION_VERSION:
                    raise _NeedsWholeLoad
                outline = _Outline(dict(value), title_line)
                continue
            _see(outline, block_offset + start, block_offset + end, value)
    return outline


def _see(outline: _Outline, offset: int, end: int, value: Any) -> None:
    if not isinstance(value, dict):
        return  # not an entry a renderer could show
    index = len(outline.offsets)
    outline.offsets.append(offset)
    outline.ends.append(end)
    skeleton: dict[str, Any] = {"index": index}
    if "id" in value:
        skeleton["id"] = value["id"]
    if "parentId" in value:
        skeleton["parentId"] = value["parentId"]
    outline.skeletons.append(skeleton)
    if value.get("type") == "session_info" and isinstance(value.get("name"), str):
        outline.session_name = value["name"]
    if value.get("timestamp") is not None:
        outline.last_timestamp = value["timestamp"]
    found = _assistant_model(value)
    if found is not None:
        model, message = found
        outline.assistants[index] = (model, {"usage": message.get("usage")})


class CutText(RedactedText):
    """The head of a long tool output, cut when its entry was read (see `load_transcript`'s `cut_outputs`): the text
    is what an export shows of the output (redacted then, if the export redacts), `length` how many characters the
    whole output has in the session."""

    length: int

    def __new__(cls, head: str, length: int) -> CutText:
        text = super().__new__(cls, head)
        text.length = length
        return text


def _full_length(text: str) -> int:
    return text.length if isinstance(text, CutText) else len(text)


def shown_output(texts: Sequence[str], limit: int) -> tuple[str, int | None]:
    """What an export shows of an output made of `texts` joined by newlines (the text blocks of a tool result, or
    one text): its first `limit` characters, and the whole output's length when it is longer (else None). A
    `CutText` counts at its whole length and is shown as cut (a secret across its cut is one marker, kept whole)."""
    pieces: list[str] = []
    position = 0
    for index, text in enumerate(texts):
        if index:
            if position >= limit:
                break
            pieces.append("\n")
            position += 1
        pieces.append(text if isinstance(text, CutText) else text[:max(0, limit - position)])
        position += _full_length(text)
    length = sum(_full_length(text) for text in texts) + max(0, len(texts) - 1)
    return "".join(pieces), (length if length > limit else None)


def output_texts(content: Any) -> list[str]:
    """The text blocks of a tool result's `content` (or the one text it is): one output, shown joined by newlines."""
    if isinstance(content, str):
        return [content]
    return [block["text"] for block in content if isinstance(block, dict) and block.get("type") == "text"
            and isinstance(block.get("text"), str)] if isinstance(content, list) else []


def _cut_outputs(entry: dict[str, Any], limit: int, keywords: tuple[str, ...] | None) -> dict[str, Any]:
    """`entry` with the long outputs of a tool result or shell run (what an export cuts at `limit` characters)
    replaced by their heads as `CutText`: redacted with `keywords` (None: not redacted), so that only the head and
    a bounded window past the cut are ever searched. Text blocks of a tool result are one output joined by
    newlines: each keeps what of it falls before the cut. Other entries are returned as they are."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict):
        return entry

    def head(text: str, room: int) -> CutText:
        if room <= 0 or keywords is None or not keywords:
            return CutText(text[:max(0, room)], len(text))
        return CutText(redact_head(text, room, keywords), len(text))

    role = message.get("role")
    output = message.get("output")
    if role == "bashExecution" and isinstance(output, str) and len(output) > limit:
        return {**entry, "message": {**message, "output": head(output, limit)}}
    content = message.get("content")
    if role != "toolResult" or not isinstance(content, (str, list)):
        return entry
    if isinstance(content, str):
        return {**entry, "message": {**message, "content": head(content, limit)}} if len(content) > limit else entry
    blocks: list[Any] = []
    start = 0  # where the block's text starts in the joined output
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            text = block["text"]
            if start + len(text) > limit:
                block = {**block, "text": head(text, limit - start)}
            start += len(text) + 1
        blocks.append(block)
    return {**entry, "message": {**message, "content": blocks}} if start - 1 > limit else entry


def _shown_entry(entry: dict[str, Any], data: bytes, redact_secrets: bool, cut_outputs: int | None) -> dict[str, Any]:
    """`entry` as an export shows it: its long outputs cut (`cut_outputs`), then redacted. `data` is the entry's
    JSON text. One pass over it says whether a rule may match in any of its strings: most entries hold no keyword,
    or hold one only as an ordinary word ("token", "keyboard"), and nothing more runs on them (the secret scan
    decides the same way). On the others, the keywords the text holds decide which rules run."""
    keywords = (keywords_in(data) if secret_places(data) else ()) if redact_secrets else None
    if cut_outputs is not None:
        entry = _cut_outputs(entry, cut_outputs, keywords)
    return redact_value(entry, keywords) if keywords else entry


@dataclass(slots=True)
class Transcript:
    """What an export shows: the header, every entry (file order) and the entries on the shown path.

    `entries` and `shown` are read from the file each time they are iterated (see the module docstring)."""

    path: Path
    header: dict[str, Any]
    entries: EntryStream
    shown: EntryStream
    leaf_id: str | None
    all_branches: bool = False
    title: str = ""
    models: dict[str, ModelTotals] = field(default_factory=dict)
    last_timestamp: Any = None
    # Per entry in file order: its id and parent id (what the tree layout needs), and how to read it.
    ids: list[Any] = field(default_factory=list)
    parent_ids: list[Any] = field(default_factory=list)
    entry_at: Callable[[int], dict[str, Any]] | None = None


def load_transcript(path: Path, runtime: SessionRuntime, *, leaf_id: str | None = None, all_branches: bool = False,
                    redact_secrets: bool = True, cut_outputs: int | None = None) -> Transcript:
    """Read the session at `path` for export. `leaf_id` picks the branch (default: the last entry's).

    `cut_outputs`: an export that shows only the first so many characters of a tool output (HTML, Markdown) has
    longer ones cut as each entry is read (`CutText`, see `shown_output`), so that a long output is redacted and
    rendered only as far as it is shown."""
    try:
        fd = open_regular(path)
    except FileNotFoundError as exc:
        raise ValueError(f"{path} is not a session file (it does not exist)") from exc
    except OSError as exc:
        raise SessionFileError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    try:
        with open(fd, "rb") as handle:
            outline = _outline(handle)
    except _NeedsWholeLoad:
        return _load_whole(path, runtime, leaf_id, all_branches, redact_secrets, cut_outputs)
    if outline is None:
        raise ValueError(f"{path} is not a session file (no valid session header)")
    blobs = BlobStore(runtime.paths.blobs_dir, runtime.file_storage())
    offsets, ends = outline.offsets, outline.ends
    skeletons = outline.skeletons

    def prepare(line: bytes, value: Any) -> dict[str, Any]:
        # Resolved blobs are images (base64), not session text: the line as written decides the redaction.
        return _shown_entry(project_loaded_entry(value, blobs), line, redact_secrets, cut_outputs)

    def read(indexes: Iterable[int]) -> Iterator[dict[str, Any]]:
        with open(open_regular(path), "rb") as handle:
            for index in indexes:
                handle.seek(offsets[index])
                line = handle.read(ends[index] - offsets[index])  # (one read: readline gathers a long line slowly)
                value = _entry_of(line)
                # The file is append-only: the entry is still where the outline saw it, unless the file was
                # replaced meanwhile (an agent rewrite); then an empty entry stands in rather than a wrong one.
                same = isinstance(value, dict) and value.get("id") == skeletons[index].get("id")
                yield prepare(line, value) if same else {}

    def entry_at(index: int) -> dict[str, Any]:
        return next(read((index,)))

    by_id = {skeleton["id"]: skeleton for skeleton in skeletons if isinstance(skeleton.get("id"), str)}
    leaf_id = _chosen_leaf(leaf_id, by_id, skeletons)
    shown_indexes = [skeleton["index"] for skeleton in
                     (skeletons if all_branches else path_to_leaf(skeletons, leaf_id, by_id))]
    models: dict[str, ModelTotals] = {}
    for index in shown_indexes:
        if index in outline.assistants:
            model, message = outline.assistants[index]
            models.setdefault(model, ModelTotals()).add(message)
    header = redact_value(outline.header) if redact_secrets else outline.header
    title = _title(outline.session_name, header, outline.title_line, redact_secrets)
    return Transcript(path, header, EntryStream(range(len(offsets)), read), EntryStream(shown_indexes, read),
                      leaf_id, all_branches,
                      title, models, outline.last_timestamp, [s.get("id") for s in skeletons],
                      [s.get("parentId") for s in skeletons], entry_at)


def _entry_of(line: bytes) -> Any:
    """The value of an entry's line as the lenient parser reads it (None when it reads none). The outline does not
    parse every line, so a line may turn out damaged only here — say, two entries run together by a torn write —
    and then its first value counts, as in a whole-file load."""
    ok, value = parse_line(line)
    if ok:
        return value
    values = parse_jsonl(line).values
    return values[0] if values else None


def _chosen_leaf(leaf_id: str | None, by_id: dict[str, dict[str, Any]], entries: list[dict[str, Any]]) -> str | None:
    if leaf_id is not None and leaf_id not in by_id:
        matches = [key for key in by_id if key.startswith(leaf_id)]
        if len(matches) != 1:
            raise LookupError(f"no single entry has an id starting with {leaf_id!r}")
        leaf_id = matches[0]
    leaf = leaf_id if leaf_id is not None else (entries[-1].get("id") if entries else None)
    return leaf if isinstance(leaf, str) else None


def _title(session_name: str | None, header: dict[str, Any], title_line: dict[str, Any] | None,
           redact_secrets: bool) -> str:
    if session_name:
        return redact(session_name) if redact_secrets else session_name
    if isinstance(header.get("title"), str) and header["title"]:
        return str(header["title"])
    if isinstance(title_line, dict) and isinstance(title_line.get("title"), str):
        return redact(title_line["title"]) if redact_secrets else title_line["title"]
    return ""


def _load_whole(path: Path, runtime: SessionRuntime, leaf_id: str | None, all_branches: bool,
                redact_secrets: bool, cut_outputs: int | None = None) -> Transcript:
    """The transcript of a file that must be loaded whole (migrated or damaged), held in memory."""
    storage = runtime.file_storage()
    loaded = load_session_file(path, storage, BlobStore(runtime.paths.blobs_dir, storage), runtime.ids.entry_id)
    if loaded.header is None:
        raise ValueError(f"{path} is not a session file (no valid session header)")
    entries = [entry for entry in loaded.entries if isinstance(entry, dict)]
    header = dict(loaded.header)
    # (json, not orjson: such a file may hold what orjson cannot write, an int beyond 64 bits.)
    entries = [_shown_entry(entry, json.dumps(entry, ensure_ascii=False).encode(), redact_secrets, cut_outputs)
               for entry in entries]
    if redact_secrets:
        header = redact_value(header)
    by_id = {entry["id"]: entry for entry in entries if isinstance(entry.get("id"), str)}
    leaf = _chosen_leaf(leaf_id, by_id, entries)
    shown = entries if all_branches else path_to_leaf(entries, leaf, by_id)
    session_name = None
    for entry in entries:
        if entry.get("type") == "session_info" and isinstance(entry.get("name"), str):
            session_name = entry["name"]
    last = next((entry["timestamp"] for entry in reversed(entries) if entry.get("timestamp") is not None), None)
    return Transcript(path, header, EntryStream.of(entries), EntryStream.of(shown), leaf, all_branches,
                      _title(session_name, header, loaded.title_line, redact_secrets), model_totals(shown), last,
                      [entry.get("id") for entry in entries], [entry.get("parentId") for entry in entries],
                      lambda index: entries[index])
