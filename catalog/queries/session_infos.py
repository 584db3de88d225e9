"""The catalog's session rows as `SessionInfo` values (`CatalogSessionInfo`), built in bulk for listings.

Only the commands that list sessions import this (with `sessdex.core.summary`).
"""

from __future__ import annotations

import os
import sqlite3
from operator import itemgetter

from sessdex.core.paths import as_path, path_from_text
from sessdex.core.summary import NO_MESSAGES, SessionInfo, datetime_from_ms, parse_iso_timestamp

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class _LazyMessagesText:
    """`all_messages_text` as a data descriptor: read from the catalog the first time it is accessed."""

    def __get__(self, info: Any, owner: type | None = None) -> Any:
        if info is None:
            return self
        text = info.__dict__.get("_all_messages_text")
        if text is None:
            text = info.__dict__["_load_messages_text"]()
            info.__dict__["_all_messages_text"] = text
        return text

    def __set__(self, info: Any, value: str | None) -> None:
        info.__dict__["_all_messages_text"] = value


class _LazyPath:
    """`path` as a data descriptor: the Path is made from the row's text the first time it is read (a listing
    table never reads it, and a Path per row was a sixth of `sessdex list`'s own time)."""

    def __get__(self, info: Any, owner: type | None = None) -> Any:
        if info is None:
            return self
        path = info.__dict__["_path"]
        if isinstance(path, str):
            path = info.__dict__["_path"] = as_path(path)
        return path

    def __set__(self, info: Any, value: str | os.PathLike[str]) -> None:
        info.__dict__["_path"] = value


class CatalogSessionInfo(SessionInfo):
    """A SessionInfo read from the catalog; its `path` is made and its `all_messages_text` fetched on first access.

    `machine` names the machine whose file it is, `remote` tells that it is not this one, and `file_id` is its
    row in the catalog (not fields of SessionInfo: they stay out of comparisons and of the agent's JSON shape).
    """

    path = _LazyPath()
    all_messages_text = _LazyMessagesText()
    machine: str | None = None
    remote: bool = False
    file_id: int | None = None

    @property
    def path_text(self) -> str:
        """`path` as a string, without making the Path."""
        return os.fspath(self.__dict__["_path"])


_new_info = object.__new__
# The setters of SessionInfo's slots (member descriptors), for CatalogSessionInfo values built in bulk.
(_set_id, _set_cwd, _set_title, _set_message_count, _set_first_message, _set_created, _set_modified,
 _set_parent_session, _set_cost, _set_total_tokens) = (
    SessionInfo.__dict__[name].__set__ for name in ("id", "cwd", "title", "message_count", "first_message", "created",
                                                     "modified", "parent_session", "cost", "total_tokens"))


# What a SessionInfo is made of, in this order (see catalog_session_info).
# = statements.INFO_COLUMNS (a test checks it): the listing statements select these, in this order, and their rows
# are read as plain tuples (statements itself is not imported: it builds SQLAlchemy objects).
INFO_COLUMNS = ("id", "machine", "path", "mtime_ns", "session_id", "cwd", "title", "message_count", "first_message",
                 "created", "parent_session", "input_tokens", "output_tokens", "cache_read_tokens",
                 "cache_write_tokens", "cost_total")


def info_columns(row: Any) -> Callable[[Any], tuple[Any, ...]]:
    """A getter of INFO_COLUMNS from rows shaped like `row`: by position for SQLite's rows (a lookup by name
    compares the column names one by one: a tenth of `sessdex list`'s own work), by name for other backends'."""
    if isinstance(row, sqlite3.Row):
        names = row.keys()
        return itemgetter(*[names.index(name) for name in INFO_COLUMNS])
    return itemgetter(*INFO_COLUMNS)


def catalog_session_info(values: tuple[Any, ...], here: str, messages_text: Callable[[int], str]) -> SessionInfo:
    """The SessionInfo of a row's INFO_COLUMNS values; `here` is this machine's name (another's file is
    `remote`), and `messages_text(file id)` reads the session's message text when it is first asked for."""
    (file_id, machine, path, mtime_ns, session_id, cwd, title, message_count, first_message, created,
     parent_session, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost) = values
    modified = datetime_from_ms(mtime_ns / 1_000_000)
    info = _new_info(CatalogSessionInfo)
    # SessionInfo's fields set as its __init__ sets them (it is immutable), without its twelve
    # object.__setattr__ calls: a listing builds hundreds.
    info.__dict__["_path"] = path_from_text(path)  # (CatalogSessionInfo.path: a Path on first access)
    _set_id(info, session_id)
    _set_cwd(info, cwd or "")
    _set_title(info, title)
    _set_message_count(info, message_count)
    _set_first_message(info, first_message if first_message is not None else NO_MESSAGES)
    _set_created(info, parse_iso_timestamp(created) or modified)
    _set_modified(info, modified)
    _set_parent_session(info, parent_session)
    _set_cost(info, cost)
    _set_total_tokens(info, input_tokens + output_tokens + cache_read_tokens + cache_write_tokens)
    info.__dict__["_all_messages_text"] = None  # loaded on first access (CatalogSessionInfo.all_messages_text)
    info.__dict__["_load_messages_text"] = lambda: messages_text(file_id)
    info.__dict__["machine"] = machine  # not fields: SessionInfo itself is immutable
    info.__dict__["remote"] = machine != here
    info.__dict__["file_id"] = file_id
    return info
