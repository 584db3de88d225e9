"""The prompts a user sent, read back out of session files, for `sessdex history import`.

Small and self-contained on purpose: it walks `<sessions root>/**/*.jsonl`, reads each file leniently
(bad lines skipped, files without a valid session header skipped) and yields every user message's
text with the session's cwd and the time it was sent. Only regular files are read (a FIFO or device
would block or never end), and a file that cannot be read for any reason is skipped and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sessdex.catalog.history.storage import ImportedPrompt
from sessdex.core.jsonl import parse_jsonl
from sessdex.core.paths import session_file_entries
from sessdex.core.records import split_session_records
from sessdex.core.regular_files import read_regular_file
from sessdex.core.summary import message_text

_MAX_EPOCH_MS = 2**53  # a timestamp beyond this (year 285,000) is not one: the entry's ISO time is used


@dataclass
class SessionPromptScan:
    """What a scan of the session files found: the prompts, and how many files were read or skipped."""

    prompts: list[ImportedPrompt] = field(default_factory=list)
    files_read: int = 0
    files_skipped: int = 0


def scan_session_prompts(sessions_root: Path) -> SessionPromptScan:
    """Every user prompt of every session file below `sessions_root` (nested folders too)."""
    scan = SessionPromptScan()
    for entry in session_file_entries(sessions_root, recursive=True, ordered=True):
        path = Path(entry.path)
        try:
            prompts = _file_prompts(path) if entry.is_file() else None
        except Exception:  # one damaged file (too deep to parse, ...) never fails the import of the others
            prompts = None
        if prompts is None:
            scan.files_skipped += 1
        else:
            scan.files_read += 1
            scan.prompts.extend(prompts)
    return scan


def _file_prompts(path: Path) -> list[ImportedPrompt] | None:
    """The user prompts of one session file; None when it cannot be read or has no valid header."""
    try:
        data = read_regular_file(path)  # a FIFO or device (replaced since it was listed) is an OSError
    except OSError:
        return None
    records = split_session_records(parse_jsonl(data).values)
    if records is None:
        return None
    cwd = records.header.get("cwd") if isinstance(records.header.get("cwd"), str) else None
    prompts = []
    for entry in records.entries:
        if not isinstance(entry, dict) or entry.get("type") != "message":
            continue
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = message_text(message)
        sent_at = _sent_at(message, entry, records.header)
        if text and sent_at is not None:
            prompts.append(ImportedPrompt(text, cwd, sent_at))
    return prompts


def _sent_at(message: dict[str, Any], entry: dict[str, Any], header: dict[str, Any]) -> int | None:
    """Unix seconds: the message's epoch-ms timestamp, else the entry's ISO time, else the session's."""
    stamp = message.get("timestamp")
    # Compared, not converted: NaN and infinities fail the test, and an integer of any size never overflows.
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and 0 < stamp < _MAX_EPOCH_MS:
        return int(stamp // 1000)
    for record in (entry, header):
        iso = record.get("timestamp")
        if isinstance(iso, str):
            try:
                return int(datetime.fromisoformat(iso).timestamp())
            except ValueError:
                continue
    return None
