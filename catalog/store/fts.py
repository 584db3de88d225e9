"""The SQLite FTS5 side of the catalog: keeping `message_fts` / `session_fts` in step, and searching them.

Together with catalog.bulk_writer (SQLite only), this is the only dialect-specific SQL outside the
migrations. Backends run it through `CatalogDatabase.fts_executemany`, which does nothing on
databases without FTS5. Every write here is a single-row statement (see catalog.indexer._Writer for
why); a bulk run writes its FTS5 rows in statements of its own.
"""

from __future__ import annotations

import sqlite3

MESSAGE_INSERT = "INSERT INTO message_fts(rowid, text) VALUES (?, ?)"
MESSAGE_DELETE = "INSERT INTO message_fts(message_fts, rowid, text) VALUES ('delete', ?, ?)"
SESSION_INSERT = "INSERT INTO session_fts(rowid, title, first_message) VALUES (?, ?, ?)"
SESSION_DELETE = "INSERT INTO session_fts(session_fts, rowid, title, first_message) VALUES ('delete', ?, ?, ?)"
FTS_TABLES = ("message_fts", "session_fts")
# The catalog_meta key of the message-text backlog: "FIRST DONE END" (message ids) while the rows FIRST..END
# were written without their message_fts entries (a first index of an earlier version made listings visible before the
# content index); the entries of FIRST..DONE exist. No key: message_fts covers every message row.
BACKLOG_KEY = "message_fts_backlog"
FILL_BACKLOG = "INSERT INTO message_fts(rowid, text) SELECT id, text FROM messages WHERE id > ? AND id <= ?"
# FTS5's limit (bytes) on the pending terms it holds in memory before writing them out as a segment.
SET_MESSAGE_HASH_SIZE = "INSERT INTO message_fts(message_fts, rank) VALUES ('hashsize', ?)"
# The catalog_meta key of the content backlog: "FIRST DONE END" (session_files ids) while the files FIRST..END were
# indexed listing first (their rows only: a first index by a read command) and those of DONE+1..END still lack
# their message rows, full-text entries and usage facts (see catalog.index.content_index). DONE = END: every file
# has them, the usage rollup is still to be summed. No key: every file's content is indexed.
FILES_BACKLOG_KEY = "content_files_backlog"

# Search ranks without snippets, so that a word in every session costs a rank per match, not a snippet per
# match: snippets are made afterwards for the rows shown only (SNIPPET_*). Sessions matched by title or first
# message come first; then sessions by their best-ranked message (min() keeps that message's rowid; the
# `rank` column is bm25(), which an aggregate cannot call itself).
SEARCH_SESSIONS = """
SELECT session_files.id AS file_id, bm25(session_fts, 10.0, 1.0) AS score
FROM session_fts JOIN session_files ON session_files.id = session_fts.rowid
WHERE session_fts MATCH :query AND session_files.header_valid = 1 AND session_files.message_count > 0 {scope}
ORDER BY score LIMIT :rows
"""
# Every project's sessions (a root scope, where nearly every match is in scope): the best matches ranked in the
# full-text index alone, a page at a time, then only those looked up in session_files for the scope's filter (by
# rowid: NOT INDEXED keeps the planner from walking the scope's path index instead). The join of SEARCH_SESSIONS
# would read the wide session_files row of every match (thousands for a common word).
RANKED_SESSIONS = """
SELECT rowid AS file_id, bm25(session_fts, 10.0, 1.0) AS score FROM session_fts WHERE session_fts MATCH :query
ORDER BY score LIMIT :rows OFFSET :skip
"""
SESSIONS_IN_SCOPE = """
SELECT session_files.id FROM session_files NOT INDEXED
WHERE session_files.id IN ({marks}) AND session_files.header_valid = 1 AND session_files.message_count > 0 {scope}
"""
SEARCH_MESSAGES = """
SELECT messages.file_id AS file_id, message_fts.rowid AS message_id, min(message_fts.rank) AS score
FROM message_fts JOIN messages ON messages.id = message_fts.rowid
JOIN session_files ON session_files.id = messages.file_id
WHERE message_fts MATCH :query AND session_files.header_valid = 1 AND session_files.message_count > 0 {scope}
GROUP BY messages.file_id ORDER BY score LIMIT :rows
"""
# Snippets of the rows shown, in one query per index: the MATCH (for a prefix word, a merge of the postings
# of every word it starts) is evaluated once, over the rowid range of those rows; `+rowid IN (...)` filters
# the rows (the unary plus keeps it from becoming one index lookup, and one MATCH, per value), so snippet()
# runs for the shown rows only. Parameters: open, close, tokens, query, lowest and highest rowid, the rowids.
SNIPPETS_OF_SESSIONS = """
SELECT rowid AS id, snippet(session_fts, 0, ?, ?, '…', ?) AS title_snippet,
       snippet(session_fts, 1, ?, ?, '…', ?) AS first_snippet
FROM session_fts WHERE session_fts MATCH ? AND rowid BETWEEN ? AND ? AND +rowid IN ({marks})
"""
SNIPPETS_OF_MESSAGES = """
SELECT rowid AS id, snippet(message_fts, 0, ?, ?, '…', ?) AS snippet
FROM message_fts WHERE message_fts MATCH ? AND rowid BETWEEN ? AND ? AND +rowid IN ({marks})
"""
SCOPE_DIRECTORIES = "AND session_files.machine = :machine AND session_files.directory IN (:dir0, :dir1, :dir2)"
SCOPE_ROOT = "AND session_files.machine = :machine AND session_files.path > :root_lo AND session_files.path < :root_hi"


def integrity_check(table: str) -> str:
    """The statement that makes FTS5 verify `table` against its content table (raises when corrupt)."""
    return f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"


def rebuild(table: str) -> str:
    """The statement that rebuilds `table` from its content table."""
    return f"INSERT INTO {table}({table}) VALUES ('rebuild')"


def read_backlog(connection: sqlite3.Connection, key: str = BACKLOG_KEY) -> tuple[int, int, int] | None:
    """(first, done, end) of the message-text backlog (see BACKLOG_KEY; or of the content backlog,
    FILES_BACKLOG_KEY), or None when there is none."""
    row = connection.execute("SELECT value FROM catalog_meta WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    first, done, end = (int(part) for part in row[0].split())
    return first, done, end


def write_backlog(connection: sqlite3.Connection, first: int, done: int, end: int) -> None:
    """Record the backlog (in the caller's transaction); none is left once `done` reaches `end`."""
    connection.execute("DELETE FROM catalog_meta WHERE key = ?", (BACKLOG_KEY,))
    if done < end:
        connection.execute("INSERT INTO catalog_meta(key, value) VALUES (?, ?)", (BACKLOG_KEY, f"{first} {done} {end}"))


def write_files_backlog(connection: sqlite3.Connection, backlog: tuple[int, int, int] | None) -> None:
    """Record the content backlog (see FILES_BACKLOG_KEY) as (first, done, end), or None: no backlog (in the
    caller's transaction)."""
    connection.execute("DELETE FROM catalog_meta WHERE key = ?", (FILES_BACKLOG_KEY,))
    if backlog is not None:
        connection.execute("INSERT INTO catalog_meta(key, value) VALUES (?, ?)",
                           (FILES_BACKLOG_KEY, " ".join(map(str, backlog))))


def backlog_progress(connection: sqlite3.Connection) -> tuple[int, int] | None:
    """(message rows indexed, message rows in the backlog) while message_fts is incomplete, else None."""
    backlog = read_backlog(connection)
    if backlog is None:
        return None
    first, done, end = backlog
    return done - first + 1, end - first + 1
