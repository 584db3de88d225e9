"""The `machines` table: each machine that writes to the catalog records where its sessions are and how to reach it.

Other machines use the record to scope their reads of its rows (`--machines all`: its sessions root, and
its home directory for the same project there) and to tell a user where a session lives
(`ssh HOST xcsh --resume PATH`). `content` is false for a machine that indexes
metadata only (`--no-content`): its rows then carry no message text, which is deleted when it turns so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessdex.catalog.index.indexer import delete_files_texts
from sessdex.catalog.store import fts
from sessdex.catalog.store.machine import host_name

if TYPE_CHECKING:
    from sessdex.catalog.store.db import CatalogDatabase


def machine_row(db: CatalogDatabase) -> Any:
    """This machine's record, or None when it never wrote to the catalog."""
    rows = db.fetchall("machine_get", {"machine": db.machine})
    return rows[0] if rows else None


def register_machine(db: CatalogDatabase, sessions_root: str, *, content: bool | None = None,
                     home: str | None = None) -> None:
    """Record (or update) this machine's sessions root, host and home (None: keep the one recorded);
    `content` switches message text on or off.

    Turning content off deletes the message text this machine stored before (in the same transaction);
    turning it back on queues this machine's files for `catalog.index.content_index` (see `_queue_content`), or
    where it cannot, makes the next freshness pass read every file of this machine again.
    """
    row = machine_row(db)
    wanted = {"machine": db.machine, "host": host_name(), "sessions_root": sessions_root,
              "content": (True if row is None else bool(row["content"])) if content is None else content,
              "home": home if home is not None else (None if row is None else row["home"])}
    if row is not None and (row["host"], row["sessions_root"], bool(row["content"]), row["home"]) == (
            wanted["host"], wanted["sessions_root"], wanted["content"], wanted["home"]):
        return
    with db.write():
        if row is None:
            db.execute("machine_insert", wanted)
        else:
            db.execute("machine_update", wanted)
        if not wanted["content"] and (row is None or row["content"]):
            _delete_message_text(db)
        elif wanted["content"] and row is not None and not row["content"]:
            if not _queue_content(db):
                db.execute("forget_machine_reads", {"own_machine": db.machine})  # the text left out before is read again


def _queue_content(db: CatalogDatabase) -> bool:
    """Record every file of this machine as the content backlog (`fts.FILES_BACKLOG_KEY`), inside the caller's write
    transaction: their message rows, full-text entries and usage facts are then read in large chunks, as after a
    listing-first index, instead of file by file. Only on a SQLite catalog that holds no backlog yet and no other
    machine's rows (a backlog is an id range of the whole catalog); False otherwise."""
    connection = db.sqlite_writer()
    if connection is None or fts.read_backlog(connection, fts.FILES_BACKLOG_KEY) or fts.read_backlog(connection):
        return False
    others, first, last = connection.execute(
        "SELECT count(*) FILTER (WHERE machine != ?), min(id), max(id) FROM session_files", (db.machine,)).fetchone()
    if others or first is None:
        return False
    fts.write_files_backlog(connection, (first, first - 1, last))
    return True


def _delete_message_text(db: CatalogDatabase) -> None:
    delete_files_texts(db, [file_id for (file_id,) in db.fetch_tuples("file_ids_with_messages")])
